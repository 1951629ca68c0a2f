/* test_trend.c - series parsing and trend verdicts on the real step logs and NVML series
 * (tests/data/extracted, written from the snapshots' .json files by extract.py) and on
 * small constructed series whose shape is known by construction. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <cmocka.h>

#include "oomdoc/input.h"
#include "read/trend.h"

#define MiB (1024.0 * 1024.0)
#define GiB (1024.0 * MiB)

static od_series *parse_text(const char *s)
{
    od_series *out = NULL;
    od_error err;
    od_status st = od_series_parse(s, strlen(s), &out, &err);
    if (st != OD_OK)
        fprintf(stderr, "parse: %s\n", err.msg);
    assert_int_equal(st, OD_OK);
    return out;
}

static od_series *parse_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    assert_true(n < sizeof buf - 1);
    fclose(f);
    buf[n] = 0;
    return parse_text(buf);
}

static od_trend_fit fit_of(od_series *s, od_metric m, uint64_t cap)
{
    od_trend_fit f;
    od_error err;
    assert_int_equal(od_trend_analyze(s, m, cap, &f, &err), OD_OK);
    return f;
}

/* leak_eval_no_grad: allocated grows about 1.38 GB per step (its README and step_log:
 * (12118196224 - 2465729536) / 7 steps = 1378923813 B/step). */
static void leak_steps(void **state)
{
    const char *files[] = {"tests/data/extracted/leak_eval_no_grad_steps.csv",
                           "tests/data/extracted/leak_eval_no_grad_steps.jsonl"};
    for (int i = 0; i < 2; i++) {
        od_series *s = parse_file(files[i]);
        assert_false(s->time_indexed);
        assert_int_equal(s->n, 8);
        assert_non_null(s->y[OD_METRIC_ALLOCATED]);
        assert_non_null(s->y[OD_METRIC_RESERVED]);
        assert_null(s->y[OD_METRIC_PEAK]);
        assert_int_equal(od_series_primary(s), OD_METRIC_ALLOCATED);
        od_trend_fit f = fit_of(s, OD_METRIC_ALLOCATED, 24ULL << 30);
        assert_int_equal(f.verdict, OD_TREND_LEAK);
        assert_true(fabs(f.growth_per_x - 1.38e9) < 0.05 * 1.38e9);
        assert_true(f.r2 > 0.99);
        assert_true(f.have_projection);
        /* 24 GiB - 12118196224 B left at step 7, at ~1.38e9 B/step: step 17 */
        assert_true(f.projected_oom >= 16 && f.projected_oom <= 18);
        od_series_free(s);
    }
}

static void noleak_steps(void **state)
{
    od_series *s = parse_file("tests/data/extracted/noleak_eval_steps.csv");
    od_trend_fit f = fit_of(s, OD_METRIC_ALLOCATED, 24ULL << 30);
    assert_int_equal(f.verdict, OD_TREND_STABLE);
    assert_true(fabs(f.growth_per_x) < 1.0);
    assert_false(f.have_projection);
    /* reserved grows in step 1 only (optimizer state, cache warm-up): left out */
    f = fit_of(s, OD_METRIC_RESERVED, 0);
    assert_int_equal(f.verdict, OD_TREND_STABLE);
    od_series_free(s);
}

static void long_run_stable(void **state)
{
    od_series *s = parse_file("tests/data/extracted/snap_train_long_steps.csv");
    assert_int_equal(s->n, 240);
    for (int m = 0; m < OD_METRIC_COUNT; m++) {
        if (!s->y[m])
            continue;
        od_trend_fit f = fit_of(s, (od_metric)m, 0);
        assert_int_equal(f.verdict, OD_TREND_STABLE);
    }
    od_series_free(s);
}

static void leak_nvml(void **state)
{
    od_series *s = parse_file("tests/data/extracted/leak_eval_no_grad_nvml.csv");
    assert_true(s->time_indexed);
    assert_int_equal(s->n, 600);
    assert_int_equal(od_series_primary(s), OD_METRIC_USED);
    od_trend_fit f = fit_of(s, OD_METRIC_USED, 0);
    assert_int_equal(f.verdict, OD_TREND_LEAK);
    /* the idle start (about 618 MiB for 9 s) is left out */
    assert_true(f.first_bytes > 1.0 * GiB);
    assert_true(f.growth_per_x > 1.0 * GiB);
    od_series_free(s);
}

static void synthetic_shapes(void **state)
{
    /* flat at 4 GiB, one step at 10 GiB: a spike */
    char buf[4096];
    size_t n = (size_t)snprintf(buf, sizeof buf, "step,allocated_gib\n");
    for (int i = 0; i < 20; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%d,%s\n", i, i == 12 ? "10" : "4");
    od_series *s = parse_text(buf);
    od_trend_fit f = fit_of(s, OD_METRIC_ALLOCATED, 0);
    assert_int_equal(f.verdict, OD_TREND_SPIKE);
    assert_true(f.spike_x == 12);
    assert_true(fabs(f.spike_bytes - 10 * GiB) < 1);
    od_series_free(s);

    /* still rising at the end of the log, but ever slower (4000 MiB * (1 - e^(-i/3))):
     * warming up, not a leak */
    n = 0;
    for (int i = 0; i < 20; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "{\"step\": %d, \"reserved_mib\": %.0f}\n", i,
                              4000.0 * (1 - exp(-i / 3.0)));
    s = parse_text(buf);
    f = fit_of(s, OD_METRIC_RESERVED, 0);
    assert_int_equal(f.verdict, OD_TREND_WARMING_UP);
    od_series_free(s);

    /* rising, then flat for most of the log: settled, stable */
    n = (size_t)snprintf(buf, sizeof buf, "step,reserved\n");
    for (int i = 0; i < 20; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%d,%lld\n", i, i < 5 ? 1000000000LL * i : 4000000000LL);
    s = parse_text(buf);
    f = fit_of(s, OD_METRIC_RESERVED, 0);
    assert_int_equal(f.verdict, OD_TREND_STABLE);
    od_series_free(s);

    /* unsorted rows and a JSON array; MB are 1000-based */
    s = parse_text("[{\"iteration\": 3, \"used_mb\": 400}, {\"iteration\": 1, \"used_mb\": 200},"
                   " {\"iteration\": 2, \"used_mb\": 300}, {\"iteration\": 0, \"used_mb\": 100}]");
    assert_int_equal(s->n, 4);
    assert_true(s->x[0] == 0 && s->x[3] == 3);
    assert_true(s->y[OD_METRIC_USED][3] == 400e6);
    f = fit_of(s, OD_METRIC_USED, 0);
    assert_int_equal(f.verdict, OD_TREND_LEAK);
    assert_true(fabs(f.growth_per_x - 100e6) < 1);
    od_series_free(s);
}

static void bad_inputs(void **state)
{
    od_series *s = NULL;
    od_error err;
    const char *no_x = "allocated,reserved\n1,2\n";
    assert_int_equal(od_series_parse(no_x, strlen(no_x), &s, &err), OD_ERR_FORMAT);
    assert_true(err.has_offset);
    const char *no_mem = "step,loss\n1,2.3\n";
    assert_int_equal(od_series_parse(no_mem, strlen(no_mem), &s, &err), OD_ERR_FORMAT);
    const char *garbage = "step,allocated\n0,100\n1,12abc\n";
    assert_int_equal(od_series_parse(garbage, strlen(garbage), &s, &err), OD_ERR_FORMAT);
    assert_int_equal(err.offset, 23); /* the field "12abc" */
    const char *neg = "step,allocated\n0,-5\n";
    assert_int_equal(od_series_parse(neg, strlen(neg), &s, &err), OD_ERR_FORMAT);
    const char *badjson = "{\"step\": 0, \"allocated\": 1}\n{\"step\": 1, \"allocated\": }\n";
    assert_int_equal(od_series_parse(badjson, strlen(badjson), &s, &err), OD_ERR_FORMAT);
    assert_true(err.offset >= 29);
    const char *str = "{\"step\": 0, \"allocated\": \"1 GiB\"}\n";
    assert_int_equal(od_series_parse(str, strlen(str), &s, &err), OD_ERR_FORMAT);
    assert_int_equal(od_series_parse("", 0, &s, &err), OD_ERR_FORMAT);
    assert_int_equal(od_series_parse("\x80\x04\x95", 3, &s, &err), OD_ERR_FORMAT);
    assert_null(s);
    /* too few points for a trend */
    s = parse_text("step,allocated\n0,1\n1,2\n");
    od_trend_fit f;
    assert_int_equal(od_trend_analyze(s, OD_METRIC_ALLOCATED, 0, &f, &err), OD_ERR_FORMAT);
    assert_int_equal(od_trend_analyze(s, OD_METRIC_PEAK, 0, &f, &err), OD_ERR_ARG);
    od_series_free(s);
}

/* Feed text to the streaming parser in chunks of size chunk (through an od_input that
 * hands out at most chunk bytes at a time, as the CLI reads). */
static od_status parse_chunked(const char *text, size_t len, size_t chunk, od_series **out, od_error *err)
{
    od_input *in = NULL;
    od_series_parser *p = NULL;
    assert_int_equal(od_input_open_memory(text, len, &in, err), OD_OK);
    od_input_limit_chunks(in, chunk);
    assert_int_equal(od_series_parser_new(&p, err), OD_OK);
    const unsigned char *d;
    size_t n;
    od_status st = OD_OK;
    while (st == OD_OK && (n = od_input_borrow(in, &d)) > 0) {
        assert_true(n <= chunk);
        st = od_series_feed(p, d, n, err);
    }
    if (st == OD_OK)
        st = od_series_finish(p, out, err);
    od_series_parser_free(p);
    od_input_close(in);
    return st;
}

/* The same text whole and in chunks of 1, 2, 3, 5, 64 and 4096 bytes: the same series
 * (every number bit for bit) or the same error (status, offset, message). */
static void same_in_chunks(const char *what, const char *text, size_t len)
{
    od_series *whole = NULL;
    od_error werr;
    memset(&werr, 0, sizeof werr);
    od_status wst = od_series_parse(text, len, &whole, &werr);
    static const size_t chunks[] = {1, 2, 3, 5, 64, 4096};
    for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++) {
        od_series *s = NULL;
        od_error err;
        memset(&err, 0, sizeof err);
        od_status st = parse_chunked(text, len, chunks[c], &s, &err);
        if (st != wst || (st != OD_OK && (err.offset != werr.offset || strcmp(err.msg, werr.msg))))
            fail_msg("%s in chunks of %zu: status %d at byte %llu (%s), whole: %d at byte %llu (%s)", what, chunks[c],
                     st, (unsigned long long)err.offset, err.msg, wst, (unsigned long long)werr.offset, werr.msg);
        if (st == OD_OK) {
            assert_int_equal(s->n, whole->n);
            assert_int_equal(s->time_indexed, whole->time_indexed);
            assert_memory_equal(s->x, whole->x, s->n * sizeof *s->x);
            for (int m = 0; m < OD_METRIC_COUNT; m++) {
                assert_int_equal(!s->y[m], !whole->y[m]);
                if (s->y[m] && s->n)
                    assert_memory_equal(s->y[m], whole->y[m], s->n * sizeof(double));
            }
        }
        od_series_free(s);
    }
    od_series_free(whole);
}

static void chunk_boundaries(void **state)
{
    (void)state;
    static const char *const files[] = {
        "tests/data/extracted/leak_eval_no_grad_steps.csv", "tests/data/extracted/leak_eval_no_grad_steps.jsonl",
        "tests/data/extracted/noleak_eval_nvml.csv",        "tests/data/extracted/snap_train_long_steps.csv",
        "tests/data/extracted/snap_train_long_steps.jsonl",
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        FILE *f = fopen(files[i], "rb");
        assert_non_null(f);
        static char buf[1 << 16];
        size_t n = fread(buf, 1, sizeof buf, f);
        fclose(f);
        same_in_chunks(files[i], buf, n);
    }
    static const char *const texts[] = {
        "step,allocated\r\n0,100\r\n1,200\r\n2,300\r\n3,400\r\n",       /* CRLF */
        "\n\r\n\rstep,allocated_mib\n0,1\n1,2.5\n2,3\n3,4",             /* leading breaks, no last break */
        "   \nstep,allocated\n0,1\n1,2\n2,3\n",                         /* a blank header */
        "step;allocated\n# c\n\n0;1\n  \n1;2\n2;3\n3;5\n",              /* comments, blank rows */
        "step,allocated\n3,30\n1,10\n2,20\n1,11\n0,0\n5,9\n",           /* unsorted, a tie */
        "step,allocated\n0,1\n,2\n",                                    /* a row without its step */
        "step,allocated\n0,123456789012345678\n1,1e3\n2,0x10\n",        /* beyond the integer shortcut */
        "step,allocated\n0,x\n1,2\n\n\0\n",                             /* a NUL after a format error */
        "\n  {\"step\":0,\"allocated\":1}\n{\"step\":1,\"allocated\":2,\"peak\":5}\n\n{\"step\":2,\"allocated\":3}\n",
        "{\"step\":0,\"allocated\":1}\n {\"step\":1,,}\n",
        "  \n [ {\"step\":0,\"allocated\":1},\n {\"step\":1,\"allocated\":2},{\"step\":2,\"allocated\":3}]\n",
        "\n\n [ {\"step\":0,\"allocated\":1},\n {\"step\":1 \"allocated\":2}]",
        "[rank0] epoch 1 step 3 loss 0.5\n[rank0] epoch 1 step 4 loss 0.4\n", /* a log, not an array */
        "[1,\n2]\n",
        "",
        " \n\t\n",
    };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        size_t len = strlen(texts[i]);
        if (i == 7)
            len = strlen(texts[i]) + 2; /* past the NUL */
        same_in_chunks(texts[i], texts[i], len);
    }
}

/* A million rows through the chunked reader: arrays only for the columns present (a row
 * costs its numbers), every number exact, the fit as for a short log. */
static void rows_keep_numbers(void **state)
{
    (void)state;
    size_t rows = 1000000;
    char *b = malloc(rows * 40 + 64);
    size_t n = (size_t)sprintf(b, "step,allocated_bytes,reserved_bytes\n");
    for (size_t i = 0; i < rows; i++)
        n += (size_t)sprintf(b + n, "%zu,%zu,%zu\n", i, 4000000000 + i * 4096, 8000000000 + i / 1000 * 2097152);
    od_series *s = NULL;
    od_error err;
    assert_int_equal(parse_chunked(b, n, 65536, &s, &err), OD_OK);
    assert_int_equal(s->n, rows);
    assert_null(s->y[OD_METRIC_PEAK]);
    assert_null(s->y[OD_METRIC_USED]);
    assert_true(s->x[rows - 1] == (double)(rows - 1));
    assert_true(s->y[OD_METRIC_ALLOCATED][rows - 1] == 4000000000.0 + (double)(rows - 1) * 4096);
    od_trend_fit f = fit_of(s, OD_METRIC_ALLOCATED, 0);
    assert_int_equal(f.verdict, OD_TREND_LEAK);
    assert_true(fabs(f.growth_per_x - 4096) < 1e-6);
    od_series_free(s);
    free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(leak_steps),       cmocka_unit_test(noleak_steps),
        cmocka_unit_test(long_run_stable),  cmocka_unit_test(leak_nvml),
        cmocka_unit_test(synthetic_shapes), cmocka_unit_test(bad_inputs),
        cmocka_unit_test(chunk_boundaries), cmocka_unit_test(rows_keep_numbers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
