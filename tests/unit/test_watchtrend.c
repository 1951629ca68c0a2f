/* test_watchtrend.c - watch's live series and trend, on the real NVML samples of the leak
 * fixture (tests/data/snapshots/leak_eval_no_grad.json, nvml_series) with expectations
 * from the same file's step_log, and on shaped series; and what watch keeps of a GPU
 * (od_watch): processes, projection and alarm, fed samples as NVML would give them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <math.h>
#include <string.h>

#include "analyze/watchtrend.h"

#define MIB (1024ull * 1024)
#define GIB (1024ull * MIB)

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

/* The hole: memory flat at 5 GB for 20 s (after a context and model load), then
 * a steady climb of 2 GB/s for the last 2 s, sampled at 10 Hz. The last third of the
 * active time is mostly the plateau, whose pairs outvote the climb's in Theil-Sen: the
 * old verdict was "stable, +0 B/s". A climb it is, at its own slope, from its start. */
static void steady_climb_after_a_plateau_is_a_climb(void **state)
{
    (void)state;
    od_wseries s;
    assert_int_equal(od_wseries_init(&s, 4096, NULL), OD_OK);
    od_wseries_add(&s, 0, 600000000ull);
    for (int i = 5; i <= 220; i++) {
        double t = i * 0.1;
        double v = 5e9 + (t > 20 ? 2e9 * (t - 20) : 0);
        od_wseries_add(&s, t, (uint64_t)v);
    }
    od_wtrend tr;
    od_wtrend_classify(&s, 140ull * GIB, &tr);
    assert_int_equal(tr.verdict, OD_WTREND_LEAK);
    assert_true(fabs(tr.growth_bytes_per_second - 2e9) < 0.02 * 2e9);
    assert_true(tr.window_start_s >= 19.85 && tr.window_start_s <= 20.25);
    assert_true(tr.r2 > 0.99);
    double proj = (140.0 * GIB - 9e9) / tr.growth_bytes_per_second;
    assert_true(fabs(tr.projected_oom_s - proj) < 0.01 * proj);
    /* The same plateau without the climb, and with one 256 MiB step at the end: stable. */
    od_wseries_free(&s);
    assert_int_equal(od_wseries_init(&s, 4096, NULL), OD_OK);
    od_wseries_add(&s, 0, 600000000ull);
    for (int i = 5; i <= 220; i++)
        od_wseries_add(&s, i * 0.1, 5000000000ull + (i >= 215 ? 256 * MIB : 0));
    od_wtrend_classify(&s, 140ull * GIB, &tr);
    assert_int_not_equal(tr.verdict, OD_WTREND_LEAK);
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

/* ---------- od_watch ---------- */

static od_nvml_process proc(uint32_t pid, uint64_t bytes)
{
    od_nvml_process p;
    memset(&p, 0, sizeof p);
    p.pid = pid;
    p.used_bytes = bytes;
    p.gpu_instance_id = p.compute_instance_id = UINT32_MAX;
    return p;
}

static const od_wproc *find_proc(const od_watch *w, uint32_t pid)
{
    for (size_t i = 0; i < w->n_procs; i++)
        if (w->procs[i].pid == pid)
            return &w->procs[i];
    return NULL;
}

/* The leak run as watch sees it: the device's samples, the training process holding what
 * torch added to the device, and a viewer holding 256 MiB all along (on the device too),
 * with a 10 s alarm. Each classification (w.raw) is checked against a plain series of the
 * same samples classified at the same moments; the verdict reported (w.tr) against the
 * hysteresis rule applied here to those plain verdicts: it becomes leak at once, and
 * leaves a verdict only after OD_WATCH_HYSTERESIS classifications in a row say another
 * one. The alarm goes off where
 * the reported projection comes within 10 s and was not at the previous classification.
 * Without the hysteresis the raw verdict leaves leak for one classification near the end
 * and the alarm went off twice; now once. */
static void watch_follows_the_leak_run(void **state)
{
    (void)state;
    json_t *series = json_object_get(fixture, "nvml_series");
    json_t *before = json_object_get(fixture, "nvml_before_torch");
    uint64_t base = (uint64_t)json_integer_value(json_object_get(before, "used"));
    uint64_t total = (uint64_t)json_integer_value(json_object_get(before, "total"));
    od_watch_config cfg = {total, 10, 0.01, 1, 4242};
    od_watch w;
    assert_int_equal(od_watch_init(&w, &cfg, NULL), OD_OK);
    od_wseries plain;
    assert_int_equal(od_wseries_init(&plain, OD_WATCH_SERIES_CAP, NULL), OD_OK);
    double t0 = json_real_value(json_array_get(json_array_get(series, 0), 0));
    size_t n = json_array_size(series), fires = 0, classified = 0;
    uint64_t torch_peak = 0;
    double last_classified = -1, first_fire_t = -1;
    int was_within = 0, raw_changes = 0, shown_changes = 0, run = 0;
    od_wtrend_verdict shown = OD_WTREND_UNKNOWN, prev_raw = OD_WTREND_UNKNOWN, cand = OD_WTREND_UNKNOWN;
    for (size_t i = 0; i < n; i++) {
        json_t *p = json_array_get(series, i);
        double t = json_real_value(json_array_get(p, 0)) - t0;
        uint64_t used = (uint64_t)json_integer_value(json_array_get(p, 1)) + 256 * MIB;
        uint64_t torch = used - 256 * MIB > base ? used - 256 * MIB - base : 0;
        if (torch > torch_peak)
            torch_peak = torch;
        od_nvml_process ps[2] = {proc(4242, torch), proc(77, 256 * MIB)};
        int fired = od_watch_sample(&w, t, used, ps, 2);
        od_wseries_add(&plain, t, used);
        int expect = 0;
        if (w.classified_at_s != last_classified) {
            /* classified at most every OD_WATCH_CLASSIFY_EVERY_S (samples come faster) */
            assert_true(w.classified_at_s == t);
            assert_true(last_classified < 0 || t - last_classified >= OD_WATCH_CLASSIFY_EVERY_S);
            last_classified = t;
            classified++;
            od_wtrend tr;
            od_wtrend_classify(&plain, total, &tr);
            assert_int_equal(tr.verdict, w.raw.verdict);
            raw_changes += tr.verdict != prev_raw;
            prev_raw = tr.verdict;
            /* the rule: to leak or from unknown at once; else after OD_WATCH_HYSTERESIS in a row */
            if (shown == OD_WTREND_UNKNOWN || tr.verdict == shown || tr.verdict == OD_WTREND_LEAK) {
                shown_changes += tr.verdict != shown;
                shown = tr.verdict;
                run = 0;
            } else {
                run = tr.verdict == cand ? run + 1 : 1;
                cand = tr.verdict;
                if (run >= OD_WATCH_HYSTERESIS) {
                    shown = tr.verdict;
                    shown_changes++;
                    run = 0;
                }
            }
            assert_int_equal(w.tr.verdict, shown);
            if (shown == tr.verdict)
                assert_true(w.tr.growth_bytes_per_second == tr.growth_bytes_per_second);
            int within = w.tr.verdict == OD_WTREND_LEAK && w.tr.projected_oom_s >= 0 &&
                         w.tr.projected_oom_s <= cfg.alarm_s;
            expect = within && !was_within;
            was_within = within;
            assert_int_equal(w.alarm_active, within);
        }
        assert_int_equal(fired, expect);
        if (fired) {
            if (!fires++)
                first_fire_t = t;
            print_message("alarm at sample %zu (t %.3f s): projected OOM in %.2f s\n", i, t, w.tr.projected_oom_s);
        }
    }
    print_message("verdict changes: %d classified, %d shown\n", raw_changes, shown_changes);
    assert_true(shown_changes < raw_changes);
    assert_int_equal(fires, 1);
    assert_true(classified > 20 && classified < n / 4);
    assert_true(w.alarm_raised && w.alarm_first_t_s == first_fire_t);

    od_watch_classify(&w);
    assert_int_equal(w.tr.verdict, OD_WTREND_LEAK);
    assert_true(w.s.peak_bytes == 17351704576ull + 256 * MIB);
    double proj = (double)(total - w.s.last_bytes) / w.tr.growth_bytes_per_second;
    assert_true(fabs(w.tr.projected_oom_s - proj) < 1e-9 * proj);
    /* checked again at the end, the alarm does not go off a second time while it is on */
    assert_int_equal(od_watch_check_alarm(&w), 0);

    /* per process: peaks, trends, and the training process's projection against what is
     * left of the GPU */
    assert_int_equal(w.n_procs, 2);
    assert_int_equal(w.procs[0].pid, 4242); /* in order of first appearance */
    const od_wproc *tp = find_proc(&w, 4242), *vp = find_proc(&w, 77);
    assert_non_null(tp);
    assert_non_null(vp);
    assert_true(tp->s.peak_bytes == torch_peak);
    assert_true(vp->s.peak_bytes == 256 * MIB);
    assert_true(vp->s.last_bytes == 256 * MIB);
    assert_int_equal(tp->tr.verdict, OD_WTREND_LEAK);
    double pproj = (double)(total - w.s.last_bytes) / tp->tr.growth_bytes_per_second;
    assert_true(fabs(tp->tr.projected_oom_s - pproj) < 1e-9 * pproj);
    assert_int_equal(vp->tr.verdict, OD_WTREND_STABLE);
    assert_true(vp->tr.projected_oom_s < 0);
    /* --pid: the training process */
    assert_true(w.pid_peak_bytes == torch_peak);
    assert_true(w.pid_last_bytes == tp->s.last_bytes);
    od_wseries_free(&plain);
    od_watch_free(&w);
}

/* A straight line: 1 GiB, then +100 MiB/s, sampled every 0.5 s (so classified at every
 * sample), against 10 GiB with a 30 s alarm. Sample k holds 1 GiB + 50k MiB; its
 * projection is (10 GiB - that) / 100 MiB/s, within 30 s first at k = 125 (7274 MiB in
 * use, 29.66 s left; k = 124 leaves 30.16 s). Then memory holds still: no longer a leak,
 * the alarm goes quiet and does not go off. */
static void alarm_fires_once_at_the_right_sample(void **state)
{
    (void)state;
    od_watch_config cfg = {10 * GIB, 30, 0.5, 0, 0};
    od_watch w;
    assert_int_equal(od_watch_init(&w, &cfg, NULL), OD_OK);
    size_t k = 0, fires = 0, first = 0;
    uint64_t used = GIB;
    for (; k <= 140; k++) {
        used = GIB + 50 * MIB * k;
        if (od_watch_sample(&w, 0.5 * (double)k, used, NULL, 0) && !fires++)
            first = k;
        assert_true(w.classified_at_s == 0.5 * (double)k);
        if (k >= 8)
            assert_int_equal(w.tr.verdict, OD_WTREND_LEAK);
        if (w.tr.verdict == OD_WTREND_LEAK) {
            assert_true(fabs(w.tr.growth_bytes_per_second - 100.0 * MIB) < 1e-6 * MIB);
            double proj = (double)(10 * GIB - used) / (100.0 * MIB);
            assert_true(fabs(w.tr.projected_oom_s - proj) < 1e-6);
        }
    }
    assert_int_equal(fires, 1);
    assert_int_equal(first, 125);
    assert_true(w.alarm_first_t_s == 62.5);
    size_t quiet_at = 0;
    for (; k <= 400; k++) {
        assert_int_equal(od_watch_sample(&w, 0.5 * (double)k, used, NULL, 0), 0);
        if (!quiet_at && !w.alarm_active)
            quiet_at = k;
    }
    assert_true(quiet_at > 140);
    assert_int_not_equal(w.tr.verdict, OD_WTREND_LEAK);
    assert_true(w.alarm_raised && w.alarm_first_t_s == 62.5);
    od_watch_free(&w);
}

/* No alarm asked: it never goes off, however close the projection. */
static void no_alarm_without_minutes(void **state)
{
    (void)state;
    od_watch_config cfg = {2 * GIB, 0, 1, 0, 0};
    od_watch w;
    assert_int_equal(od_watch_init(&w, &cfg, NULL), OD_OK);
    for (size_t k = 0; k < 40; k++)
        assert_int_equal(od_watch_sample(&w, (double)k, GIB + 20 * MIB * k, NULL, 0), 0);
    assert_int_equal(w.tr.verdict, OD_WTREND_LEAK);
    assert_true(w.tr.projected_oom_s >= 0);
    assert_false(w.alarm_raised);
    od_watch_free(&w);
}

/* Processes as NVML lists them: one twice (MIG), one whose memory NVML does not say,
 * one that ends and whose PID comes back, and more than the table holds. */
static void processes_come_and_go(void **state)
{
    (void)state;
    od_watch_config cfg = {80 * GIB, 0, 0.1, 1, 7};
    od_watch w;
    assert_int_equal(od_watch_init(&w, &cfg, NULL), OD_OK);
    od_nvml_process ps[OD_WATCH_MAX_PROCS + 8];
    /* t 0: 7 twice (two MIG instances), 8 unknown, 9 with 3 GiB */
    ps[0] = proc(7, GIB);
    ps[1] = proc(7, 2 * GIB);
    ps[2] = proc(8, OD_NVML_BYTES_UNKNOWN);
    ps[3] = proc(9, 3 * GIB);
    od_watch_sample(&w, 0, 6 * GIB, ps, 4);
    assert_int_equal(w.n_procs, 3);
    assert_true(find_proc(&w, 7)->s.last_bytes == 3 * GIB);
    assert_true(find_proc(&w, 8)->s.last_bytes == 0);
    assert_true(w.pid_last_bytes == 3 * GIB && w.pid_peak_bytes == 3 * GIB);
    /* t 1: 9 has ended, 7 holds less */
    ps[0] = proc(7, GIB);
    ps[1] = proc(8, 512 * MIB);
    od_watch_sample(&w, 1, 2 * GIB, ps, 2);
    assert_int_equal(w.n_procs, 2);
    assert_null(find_proc(&w, 9));
    assert_true(w.pid_last_bytes == GIB && w.pid_peak_bytes == 3 * GIB);
    assert_true(find_proc(&w, 8)->s.peak_bytes == 512 * MIB);
    /* t 2: PID 9 again, a new process: its peak starts afresh */
    ps[2] = proc(9, MIB);
    od_watch_sample(&w, 2, 2 * GIB, ps, 3);
    assert_true(find_proc(&w, 9)->s.peak_bytes == MIB);
    assert_true(find_proc(&w, 9)->s.samples == 1);
    assert_true(w.s.peak_bytes == 6 * GIB && w.s.samples == 3);
    od_watch_free(&w);

    /* more processes than the table holds: the first ones are followed; the followed PID,
     * listed last, still counts */
    assert_int_equal(od_watch_init(&w, &cfg, NULL), OD_OK);
    size_t np = 0;
    for (uint32_t pid = 100; np < OD_WATCH_MAX_PROCS + 7; pid++)
        ps[np++] = proc(pid, MIB);
    ps[np++] = proc(7, 5 * GIB);
    od_watch_sample(&w, 0, 20 * GIB, ps, np);
    assert_int_equal(w.n_procs, OD_WATCH_MAX_PROCS);
    assert_int_equal(w.procs[OD_WATCH_MAX_PROCS - 1].pid, 100 + OD_WATCH_MAX_PROCS - 1);
    assert_null(find_proc(&w, 7));
    assert_true(w.pid_last_bytes == 5 * GIB && w.pid_peak_bytes == 5 * GIB);
    od_watch_free(&w);
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
        cmocka_unit_test(steady_climb_after_a_plateau_is_a_climb),
        cmocka_unit_test(too_few_is_unknown),
        cmocka_unit_test(memory_stays_bounded),
        cmocka_unit_test(watch_follows_the_leak_run),
        cmocka_unit_test(alarm_fires_once_at_the_right_sample),
        cmocka_unit_test(no_alarm_without_minutes),
        cmocka_unit_test(processes_come_and_go),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    json_decref(fixture);
    return rc;
}
