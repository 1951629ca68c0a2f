/* test_replay.c - replaying the real fixtures must reproduce what torch recorded.
 * Ground truth comes from the fixtures themselves: each NAME.json (alloc_conf, cap,
 * step_log[].peak = max_memory_allocated per step, memory_stats, allocated_end /
 * reserved_end), the snapshot's final segments, and the recorded trace entries
 * (segment events, the oom entry's index). Settings are parsed from the .json's
 * alloc_conf, not taken from the model. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "replay.h"
#include "snapshot.h"

#define DIR "tests/data/snapshots/"
/* torch's total for the fixtures' device (tests/data/README.md) */
#define DEVICE_TOTAL 150109880320ull

typedef struct {
    od_snapshot *snap;
    json_t *meta;
    od_replay_opts opts;
} fixture;

static void load(fixture *f, const char *name)
{
    char path[256];
    snprintf(path, sizeof path, DIR "%s.pickle", name);
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        snprintf(path, sizeof path, DIR "%s.pickle.gz", name);
        fp = fopen(path, "rb");
    }
    assert_non_null(fp);
    od_input *in = NULL;
    od_error err;
    assert_int_equal(od_input_open_file(fp, &in, &err), OD_OK);
    assert_int_equal(od_snapshot_load(in, &f->snap, &err), OD_OK);
    od_input_close(in);
    fclose(fp);
    snprintf(path, sizeof path, DIR "%s.json", name);
    f->meta = json_load_file(path, 0, NULL);
    assert_non_null(f->meta);
    od_allocsim_config_default(&f->opts.cfg);
    const char *conf = json_string_value(json_object_get(f->meta, "alloc_conf"));
    assert_non_null(conf);
    assert_int_equal(od_allocsim_config_parse(&f->opts.cfg, conf, NULL), OD_OK);
    json_t *args = json_object_get(f->meta, "args");
    json_t *cap = json_object_get(args, "cap_bytes"), *frac = json_object_get(args, "fraction");
    if (cap) f->opts.cfg.allowed_bytes = (uint64_t)json_integer_value(cap);
    if (frac) f->opts.cfg.allowed_bytes = (uint64_t)(json_real_value(frac) * (double)DEVICE_TOTAL);
    f->opts.cfg.device_total_bytes = DEVICE_TOTAL;
    f->opts.device = -1;
}

static void unload(fixture *f)
{
    od_snapshot_free(f->snap);
    json_decref(f->meta);
}

/* max over steps of max_memory_allocated(), or memory_stats' peak, or 0 if neither */
static uint64_t real_peak(const fixture *f)
{
    uint64_t peak = 0;
    size_t i;
    json_t *step;
    json_array_foreach(json_object_get(f->meta, "step_log"), i, step) {
        uint64_t p = (uint64_t)json_integer_value(json_object_get(step, "peak"));
        if (p > peak) peak = p;
    }
    if (!peak) {
        json_t *ms = json_object_get(f->meta, "memory_stats");
        peak = (uint64_t)json_integer_value(json_object_get(ms, "allocated_bytes.all.peak"));
    }
    return peak;
}

static void snapshot_finals(const od_snapshot *s, uint64_t *alloc, uint64_t *resv)
{
    *alloc = *resv = 0;
    for (size_t i = 0; i < s->n_segments; i++) {
        *alloc += s->segments[i].allocated_size;
        *resv += s->segments[i].total_size;
    }
}

static size_t count_segment_entries(const od_snapshot *s)
{
    size_t n = 0;
    for (size_t i = 0; i < s->traces[0].n_entries; i++) {
        uint8_t a = s->traces[0].entries[i].action;
        n += a == OD_ACT_SEGMENT_ALLOC || a == OD_ACT_SEGMENT_FREE || a == OD_ACT_SEGMENT_MAP ||
             a == OD_ACT_SEGMENT_UNMAP;
    }
    return n;
}

static long oom_entry_index(const od_snapshot *s)
{
    for (size_t i = 0; i < s->traces[0].n_entries; i++)
        if (s->traces[0].entries[i].action == OD_ACT_OOM) return (long)i;
    return -1;
}

/* A complete trace under its own settings and cap verifies 100%. */
static void verify_complete(const char *name)
{
    fixture f;
    load(&f, name);
    od_replay_result r;
    od_error err;
    assert_int_equal(od_replay_snapshot(f.snap, &f.opts, &r, &err), OD_OK);
    assert_int_equal(r.approximate, 0);
    size_t recorded = count_segment_entries(f.snap);
    assert_true(recorded > 0);
    assert_int_equal(r.seg_recorded, recorded);
    assert_int_equal(r.seg_simulated, recorded);
    assert_int_equal(r.seg_matched, recorded);
    assert_int_equal(r.seg_addr_matched, recorded);
    assert_int_equal(r.external_releases, 0);
    assert_int_equal(r.has_mismatch, 0);
    assert_int_equal(r.alloc_addr_mismatches, 0);
    assert_true(od_replay_verified(&r));
    uint64_t peak = real_peak(&f);
    if (peak) assert_int_equal(r.stats.peak_allocated_bytes, peak);
    uint64_t fa, fr;
    snapshot_finals(f.snap, &fa, &fr);
    assert_int_equal(r.stats.allocated_bytes, fa);
    assert_int_equal(r.stats.reserved_bytes, fr);
    json_t *ae = json_object_get(f.meta, "allocated_end"), *re = json_object_get(f.meta, "reserved_end");
    if (ae) assert_int_equal(r.stats.allocated_bytes, (uint64_t)json_integer_value(ae));
    if (re) assert_int_equal(r.stats.reserved_bytes, (uint64_t)json_integer_value(re));
    /* the model fails exactly the requests torch failed */
    long oi = oom_entry_index(f.snap);
    if (oi >= 0) {
        assert_int_equal(r.oom.happened, 1);
        assert_int_equal(r.oom.event_index, (size_t)oi);
        assert_int_equal(r.oom.recorded, 1);
        assert_int_equal(r.ooms, 1);
    } else {
        assert_int_equal(r.oom.happened, 0);
    }
    unload(&f);
}

static void frag_default(void **s) { (void)s; verify_complete("frag_default"); }
static void frag_default_70(void **s) { (void)s; verify_complete("frag_default_70"); }
static void frag_expandable(void **s) { (void)s; verify_complete("frag_expandable"); }
static void leak_eval_no_grad(void **s) { (void)s; verify_complete("leak_eval_no_grad"); }
static void noleak_eval(void **s) { (void)s; verify_complete("noleak_eval"); }
static void snap_train_default(void **s) { (void)s; verify_complete("snap_train_default"); }
static void snap_train_expandable(void **s) { (void)s; verify_complete("snap_train_expandable"); }
static void snap_train_maxsplit(void **s) { (void)s; verify_complete("snap_train_maxsplit"); }
static void snap_train_oom(void **s) { (void)s; verify_complete("snap_train_oom"); }
static void snap_train_big(void **s) { (void)s; verify_complete("snap_train_big"); }

static void settings_from_snapshot_match_alloc_conf(void **state)
{
    (void)state;
    const char *names[] = { "snap_train_maxsplit", "frag_expandable", "snap_train_default" };
    for (size_t i = 0; i < 3; i++) {
        fixture f;
        load(&f, names[i]);
        od_allocsim_config c;
        od_replay_config_from_snapshot(f.snap, &c);
        assert_true(c.max_split_size == f.opts.cfg.max_split_size);
        assert_int_equal(c.expandable_segments, f.opts.cfg.expandable_segments);
        assert_memory_equal(c.roundup_power2_divisions, f.opts.cfg.roundup_power2_divisions,
                            sizeof c.roundup_power2_divisions);
        unload(&f);
    }
}

/* Without its cap, frag_default's last request fits (nothing limits reserved memory),
 * and the recorded releases before it no longer happen: verification must fail. */
static void frag_default_without_cap(void **state)
{
    (void)state;
    fixture f;
    load(&f, "frag_default");
    f.opts.cfg.allowed_bytes = 0;
    od_replay_result r;
    assert_int_equal(od_replay_snapshot(f.snap, &f.opts, &r, NULL), OD_OK);
    assert_int_equal(r.oom.happened, 0);
    assert_false(od_replay_verified(&r));
    assert_int_equal(r.has_mismatch, 1);
    assert_int_equal(r.mismatch_trace_index, (size_t)oom_entry_index(f.snap) - 3);
    unload(&f);
}

/* Wrapped traces: flagged approximate, never verified; the rebuilt start still lands on
 * the recorded final state and, for snap_train_long, on the real peak. */
static void wrapped(void **state)
{
    (void)state;
    const char *names[] = { "snap_train_long", "snap_infer_llama" };
    for (size_t i = 0; i < 2; i++) {
        fixture f;
        load(&f, names[i]);
        od_replay_result r;
        assert_int_equal(od_replay_snapshot(f.snap, &f.opts, &r, NULL), OD_OK);
        assert_int_equal(r.approximate, 1);
        assert_false(od_replay_verified(&r));
        assert_true(r.seeded_segments > 0);
        uint64_t fa, fr;
        snapshot_finals(f.snap, &fa, &fr);
        assert_int_equal(r.stats.allocated_bytes, fa);
        assert_int_equal(r.stats.reserved_bytes, fr);
        uint64_t peak = real_peak(&f);
        if (peak) assert_int_equal(r.stats.peak_allocated_bytes, peak);
        assert_int_equal(r.events_replayed, f.snap->traces[0].n_entries - count_segment_entries(f.snap));
        unload(&f);
    }
}

static void cap_below_live_state(void **state)
{
    (void)state;
    fixture f;
    load(&f, "snap_infer_llama");
    f.opts.cfg.allowed_bytes = 1 << 20;
    od_replay_result r;
    od_error err;
    assert_int_equal(od_replay_snapshot(f.snap, &f.opts, &r, &err), OD_ERR_ARG);
    assert_non_null(strstr(err.msg, "already reserved"));
    unload(&f);
}

/* Hand-built trace: an empty_cache() between two requests shows up only as its
 * segment_free; the replay applies it and counts it as an external release. */
static void external_release(void **state)
{
    (void)state;
    const uint64_t M = 1 << 20, A = 0x7f0000000000ull - 30 * M;
    od_trace_entry e[] = {
        { .action = OD_ACT_SEGMENT_ALLOC, .addr = A, .size = 30 * M },
        { .action = OD_ACT_ALLOC, .addr = A, .size = 30 * M },
        { .action = OD_ACT_FREE_REQUESTED, .addr = A, .size = 30 * M },
        { .action = OD_ACT_FREE_COMPLETED, .addr = A, .size = 30 * M },
        { .action = OD_ACT_SEGMENT_FREE, .addr = A, .size = 30 * M },
        { .action = OD_ACT_SEGMENT_ALLOC, .addr = A, .size = 30 * M },
        { .action = OD_ACT_ALLOC, .addr = A, .size = 30 * M },
    };
    od_replay_opts o;
    od_allocsim_config_default(&o.cfg);
    o.device = 0;
    od_replay_result r;
    assert_int_equal(od_replay_trace(e, 7, &o, &r, NULL), OD_OK);
    assert_int_equal(r.external_releases, 1);
    assert_int_equal(r.seg_recorded, 3);
    assert_int_equal(r.seg_matched, 3);
    assert_true(od_replay_verified(&r));
    /* without the release, the second alloc would have reused the cached block */
    e[4].action = OD_ACT_SNAPSHOT;
    e[5].action = OD_ACT_SNAPSHOT;
    assert_int_equal(od_replay_trace(e, 7, &o, &r, NULL), OD_OK);
    assert_int_equal(r.external_releases, 0);
    assert_int_equal(r.seg_recorded, 1);
    assert_int_equal(r.seg_simulated, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(frag_default),
        cmocka_unit_test(frag_default_70),
        cmocka_unit_test(frag_expandable),
        cmocka_unit_test(leak_eval_no_grad),
        cmocka_unit_test(noleak_eval),
        cmocka_unit_test(snap_train_default),
        cmocka_unit_test(snap_train_expandable),
        cmocka_unit_test(snap_train_maxsplit),
        cmocka_unit_test(snap_train_oom),
        cmocka_unit_test(snap_train_big),
        cmocka_unit_test(settings_from_snapshot_match_alloc_conf),
        cmocka_unit_test(frag_default_without_cap),
        cmocka_unit_test(wrapped),
        cmocka_unit_test(cap_below_live_state),
        cmocka_unit_test(external_release),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
