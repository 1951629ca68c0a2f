/* test_prom.c - request head parsing (what Prometheus, curl and garbage send) and the
 * text exposition format's escaping and numbers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "render/prom.h"

static od_status parse(const char *s, od_http_request *req, int *complete, od_error *err)
{
    return od_http_parse_request(s, strlen(s), req, complete, err);
}

static void parses_a_prometheus_scrape(void **state)
{
    (void)state;
    /* The head Prometheus 2.x sends. */
    const char *s = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:9400\r\nUser-Agent: Prometheus/2.53.0\r\n"
                    "Accept: text/plain;version=0.0.4;q=0.5\r\nX-Prometheus-Scrape-Timeout-Seconds: 10\r\n\r\n";
    od_http_request req;
    od_error err;
    int complete;
    assert_int_equal(parse(s, &req, &complete, &err), OD_OK);
    assert_true(complete);
    assert_string_equal(req.method, "GET");
    assert_string_equal(req.path, "/metrics");
    assert_int_equal(req.minor, 1);
    /* Every proper prefix is incomplete, not an error. */
    for (size_t n = 0; n < strlen(s); n++) {
        assert_int_equal(od_http_parse_request(s, n, &req, &complete, &err), OD_OK);
        assert_false(complete);
    }
    assert_int_equal(parse("GET /metrics?name[]=x HTTP/1.0\n\n", &req, &complete, &err), OD_OK);
    assert_true(complete);
    assert_string_equal(req.path, "/metrics");
}

static void refuses_what_is_not_http1(void **state)
{
    (void)state;
    od_http_request req;
    od_error err;
    int complete;
    assert_int_equal(parse("\x16\x03\x01\x02", &req, &complete, &err), OD_ERR_FORMAT);
    assert_true(err.has_offset && err.offset == 0);
    assert_int_equal(parse("GET /metrics HTTP/2.0\r\n\r\n", &req, &complete, &err), OD_ERR_FORMAT);
    assert_true(err.offset == 18); /* the "2" of HTTP/2.0 */
    assert_int_equal(parse("GET / HTTP/1.1\r\nno colon here\r\n\r\n", &req, &complete, &err), OD_ERR_FORMAT);
    assert_true(err.offset == 16);
    char big[OD_HTTP_MAX_HEAD + 100];
    memset(big, 'a', sizeof big);
    memcpy(big, "GET / HTTP/1.1\r\nX: ", 19);
    assert_int_equal(od_http_parse_request(big, sizeof big, &req, &complete, &err), OD_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "longer than"));
}

static void writes_exposition(void **state)
{
    (void)state;
    od_promtext p;
    od_promtext_init(&p);
    od_prom_family(&p, "m_bytes", "Help with \\ and\nnewline.", "gauge");
    const char *labels[] = {"gpu", "0", "name", "a\"b\\c\nd"};
    od_prom_sample(&p, "m_bytes", labels, 2, 150754820096.0);
    od_prom_sample(&p, "m_bytes", labels, 1, INFINITY);
    od_prom_sample(&p, "m_bytes", NULL, 0, 0.5);
    const char *bad[] = {"name", "H200\xff\xc3", "ok", "é"};
    od_prom_sample(&p, "m_bytes", bad, 2, 1);
    assert_false(p.oom);
    assert_string_equal(p.data,
                        "# HELP m_bytes Help with \\\\ and\\nnewline.\n"
                        "# TYPE m_bytes gauge\n"
                        "m_bytes{gpu=\"0\",name=\"a\\\"b\\\\c\\nd\"} 150754820096\n"
                        "m_bytes{gpu=\"0\"} +Inf\n"
                        "m_bytes 0.5\n"
                        "m_bytes{name=\"H200\xef\xbf\xbd\xef\xbf\xbd\",ok=\"é\"} 1\n");
    od_promtext_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parses_a_prometheus_scrape),
        cmocka_unit_test(refuses_what_is_not_http1),
        cmocka_unit_test(writes_exposition),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
