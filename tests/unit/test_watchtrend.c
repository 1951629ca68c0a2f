/* test_watchtrend.c - watch's live series and trend, on the real NVML samples of the leak
 * fixture (tests/data/snapshots/leak_eval_no_grad.json, nvml_series) with expectations
 * from the same file's step_log, and on shaped series. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <math.h>

#include "watchtrend.h"

static json_t *fixture;

/* Feed the first `count` samples of nvml_series (all when count is 0). */
static void feed_leak(od_wseries *s, size_t count)
{
    json_t *series = json_object_get(fixture, "nvml_series");
    assert_non_null(series);
    double t0 = json_real_value(json_array_get(json_array_get(series, 0), 0));
    size_t n = json_array_size(series);
    if (count && count < n)
        n = count;
    for (size_t i = 0; i < n; i++) {
        json_t *p = json_array_get(series, i);
        od_wseries_add(s, json_real_value(json_array_get(p, 0)) - t0,
                       (uint64_t)json_integer_value(json_array_get(p, 1)));
    }
}

static void leak_series_is_a_leak(void **state)
{
    (void)state;
    od_wseries s;
    assert_int_equal(od_wseries_init(&s, 4096, NULL), OD_OK);
    feed_leak(&s, 0);
    /* Ground truth: the reserved memory (what NVML sees of torch) grew between step 1 and
     * step 7 of step_log at this rate. */
    json_t *log = json_object_get(fixture, "step_log");
    json_t *s1 = json_array_get(log, 1), *s7 = json_array_get(log, 7);
    double rate = (double)(json_integer_value(json_object_get(s7, "reserved")) -
                           json_integer_value(json_object_get(s1, "reserved"))) /
                  (json_real_value(json_object_get(s7, "t")) - json_real_value(json_object_get(s1, "t")));
    uint64_t total = (uint64_t)json_integer_value(
        json_object_get(json_object_get(fixture, "nvml_before_torch"), "total"));
    od_wtrend tr;
    od_wtrend_classify(&s, total, &tr);
    assert_int_equal(tr.verdict, OD_WTREND_LEAK);
    print_message("growth %.4g B/s, step_log rate %.4g B/s, r2 %.3f\n",
                  tr.growth_bytes_per_second, rate, tr.r2);
    assert_true(fabs(tr.growth_bytes_per_second - rate) <= 0.10 * rate);
    assert_true(s.peak_bytes == 17351704576ull);
    double proj = (double)(total - 17351704576ull) / tr.growth_bytes_per_second;
    assert_true(fabs(tr.projected_oom_s - proj) < 1e-6 * proj);
    assert_true(tr.projected_oom_s > 3 && tr.projected_oom_s < 6);
    od_wseries_free(&s);
}

static void warmup_then_plateau_is_stable(void **state)
{
    (void)state;
    /* The same run up to sample 567 (t = 10.21 s, step 1's start in step_log): idle, CUDA
     * context and model load, then a plateau - warm-up, not a leak. */
    od_wseries s;
    assert_int_equal(od_wseries_init(&s, 4096, NULL), OD_OK);
    feed_leak(&s, 567);
    od_wtrend tr;
    od_wtrend_classify(&s, 150754820096ull, &tr);
    assert_int_equal(tr.verdict, OD_WTREND_STABLE);
    assert_true(tr.projected_oom_s < 0);
    od_wseries_free(&s);
}

static void transient_peak_is_a_spike(void **state)
{
    (void)state;
    od_wseries s;
    assert_int_equal(od_wseries_init(&s, 256, NULL), OD_OK);
    for (int i = 0; i < 200; i++) {
        uint64_t v = 8ull << 30;
        if (i >= 100 && i < 110)
            v += 6ull << 30;
        od_wseries_add(&s, i * 0.1, v);
    }
    od_wtrend tr;
    od_wtrend_classify(&s, 80ull << 30, &tr);
    assert_int_equal(tr.verdict, OD_WTREND_SPIKE);
    assert_true(s.peak_bytes == 14ull << 30);
    od_wseries_free(&s);
}

static void too_few_is_unknown(void **state)
{
    (void)state;
    od_wseries s;
    assert_int_equal(od_wseries_init(&s, 16, NULL), OD_OK);
    od_wseries_add(&s, 0, 1);
    od_wtrend tr;
    od_wtrend_classify(&s, 0, &tr);
    assert_int_equal(tr.verdict, OD_WTREND_UNKNOWN);
    assert_string_equal(od_wtrend_name(tr.verdict), "unknown");
    od_wseries_free(&s);
    assert_int_equal(od_wseries_init(&s, 3, NULL), OD_ERR_ARG);
}

static void memory_stays_bounded(void **state)
{
    (void)state;
    /* A day at 10 samples/s, steady growth of 4 KiB/s, one clock step backwards. */
    od_wseries s;
    assert_int_equal(od_wseries_init(&s, 64, NULL), OD_OK);
    size_t total = 864000;
    for (size_t i = 0; i < total; i++) {
        double t = i * 0.1;
        if (i == 1000)
            t = 5; /* backwards: clamped */
        od_wseries_add(&s, t, (1ull << 30) + (uint64_t)(i * 0.1 * 4096));
        assert_true(s.n <= 64);
    }
    assert_true(s.samples == total);
    assert_true(s.t_s[0] == 0);
    assert_true(s.t_s[s.n - 1] > 86000); /* still covers the whole day */
    for (size_t i = 1; i < s.n; i++)
        assert_true(s.t_s[i] >= s.t_s[i - 1]);
    od_wtrend tr;
    od_wtrend_classify(&s, 2ull << 30, &tr);
    assert_true(fabs(tr.growth_bytes_per_second - 4096) < 8);
    assert_int_equal(tr.verdict, OD_WTREND_LEAK); /* 112 MiB over the last third: above 64 MiB and 2% */
    od_wseries_free(&s);
}

int main(void)
{
    json_error_t jerr;
    fixture = json_load_file("tests/data/snapshots/leak_eval_no_grad.json", 0, &jerr);
    if (!fixture) {
        fprintf(stderr, "test_watchtrend: %s\n", jerr.text);
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(leak_series_is_a_leak),
        cmocka_unit_test(warmup_then_plateau_is_stable),
        cmocka_unit_test(transient_peak_is_a_spike),
        cmocka_unit_test(too_few_is_unknown),
        cmocka_unit_test(memory_stays_bounded),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    json_decref(fixture);
    return rc;
}
