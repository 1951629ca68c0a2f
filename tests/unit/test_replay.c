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
#include <stdlib.h>
#include <string.h>

#include "model/replay.h"
#include "oomdoc/snapshot.h"
#include "read/tracepass.h"

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
    memset(f, 0, sizeof *f);
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
        uint8_t a = od_trace_action(&s->traces[0], i);
        n += a == OD_ACT_SEGMENT_ALLOC || a == OD_ACT_SEGMENT_FREE || a == OD_ACT_SEGMENT_MAP ||
             a == OD_ACT_SEGMENT_UNMAP;
    }
    return n;
}

static long oom_entry_index(const od_snapshot *s)
{
    for (size_t i = 0; i < s->traces[0].n_entries; i++)
        if (od_trace_action(&s->traces[0], i) == OD_ACT_OOM) return (long)i;
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

/* CUDA graph capture (torch.cuda.graph after 3 warm-up passes on a side stream, 3
 * replays, one eager tensor after): the capture's requests draw from the graph's private
 * pool, which the replay infers from the final segments' segment_pool_id. Every recorded
 * segment event matches, the one external release is the empty_cache() the capture
 * begins with, and the end state is the run's (allocated_end / reserved_end, peak). */
static void snap_cudagraph(void **state)
{
    (void)state;
    fixture f;
    load(&f, "snap_cudagraph");
    od_replay_result r;
    assert_int_equal(od_replay_snapshot(f.snap, &f.opts, &r, NULL), OD_OK);
    size_t recorded = count_segment_entries(f.snap);
    assert_int_equal(recorded, 11);
    assert_int_equal(r.seg_recorded, recorded);
    assert_int_equal(r.seg_simulated, recorded);
    assert_int_equal(r.seg_matched, recorded);
    assert_int_equal(r.seg_addr_matched, recorded);
    assert_int_equal(r.has_mismatch, 0);
    assert_int_equal(r.alloc_addr_mismatches, 0);
    assert_int_equal(r.external_releases, 1);
    assert_true(od_replay_verified(&r));
    assert_int_equal(r.approximate, 0);
    assert_int_equal(r.private_pools, 1);
    /* the capture's six requests: relu(lin(x)) * 2 (four, one reusing a block freed during
     * the capture) and y @ y.t(); the two capture_begin makes before beginAllocateToPool
     * land in the default pool on the capture stream */
    assert_int_equal(r.private_allocs, 6);
    uint64_t fa, fr;
    snapshot_finals(f.snap, &fa, &fr);
    assert_int_equal(r.stats.allocated_bytes, fa);
    assert_int_equal(r.stats.reserved_bytes, fr);
    assert_int_equal(r.stats.allocated_bytes, (uint64_t)json_integer_value(json_object_get(f.meta, "allocated_end")));
    assert_int_equal(r.stats.reserved_bytes, (uint64_t)json_integer_value(json_object_get(f.meta, "reserved_end")));
    assert_int_equal(r.stats.peak_allocated_bytes, (uint64_t)json_integer_value(json_object_get(f.meta, "peak")));
    unload(&f);
}

/* A what-if is judged by the model's replay of the run under its own settings and the
 * same cap: frag_default without its cap is not reproduced, so neither the replay nor a
 * what-if on it may claim exact figures; with the cap both are exact. */
static void whatif_judged_by_own_replay(void **state)
{
    (void)state;
    fixture f;
    load(&f, "frag_default");
    uint64_t cap = f.opts.cfg.allowed_bytes;
    od_replay_result r;
    f.opts.cfg.allowed_bytes = 0;
    assert_int_equal(od_replay_snapshot(f.snap, &f.opts, &r, NULL), OD_OK);
    assert_int_equal(r.whatif, 0);
    assert_int_equal(r.approximate, 1);
    assert_int_equal(r.answerable, 1);
    od_replay_opts w = f.opts;
    assert_int_equal(od_allocsim_config_parse(&w.cfg, "expandable_segments:True", NULL), OD_OK);
    assert_int_equal(od_replay_snapshot(f.snap, &w, &r, NULL), OD_OK);
    assert_int_equal(r.whatif, 1);
    assert_int_equal(r.approximate, 1);
    assert_int_equal(r.answerable, 1);
    w.cfg.allowed_bytes = cap;
    assert_int_equal(od_replay_snapshot(f.snap, &w, &r, NULL), OD_OK);
    assert_int_equal(r.whatif, 1);
    assert_int_equal(r.approximate, 0);
    assert_false(od_replay_verified(&r)); /* other settings: other segment events */
    /* spelling out the run's own settings is no what-if */
    od_replay_opts same = f.opts;
    same.cfg.allowed_bytes = cap;
    assert_int_equal(od_allocsim_config_parse(&same.cfg, "expandable_segments:False,max_non_split_rounding_mb:20", NULL), OD_OK);
    assert_int_equal(od_replay_snapshot(f.snap, &same, &r, NULL), OD_OK);
    assert_int_equal(r.whatif, 0);
    assert_int_equal(r.approximate, 0);
    assert_true(od_replay_verified(&r));
    unload(&f);
}

/* A wrapped trace starts from segments the run's own settings laid out: a what-if on it
 * cannot be answered, while the run's own settings can (approximately). */
static void wrapped_whatif_unanswerable(void **state)
{
    (void)state;
    fixture f;
    load(&f, "snap_infer_llama");
    od_replay_result r;
    assert_int_equal(od_replay_snapshot(f.snap, &f.opts, &r, NULL), OD_OK);
    assert_int_equal(r.wrapped, 1);
    assert_int_equal(r.whatif, 0);
    assert_int_equal(r.answerable, 1);
    assert_int_equal(r.approximate, 1);
    const char *whatifs[] = { "expandable_segments:True", "max_split_size_mb:128",
                              "garbage_collection_threshold:0.6", "roundup_power2_divisions:4" };
    for (size_t i = 0; i < 4; i++) {
        od_replay_opts w = f.opts;
        assert_int_equal(od_allocsim_config_parse(&w.cfg, whatifs[i], NULL), OD_OK);
        assert_int_equal(od_replay_snapshot(f.snap, &w, &r, NULL), OD_OK);
        assert_int_equal(r.whatif, 1);
        assert_int_equal(r.answerable, 0);
        assert_int_equal(r.approximate, 1);
    }
    unload(&f);
}

/* Block sizes handed out, per entry (in 512-byte units): summed (minus the blocks freed) they are the
 * model's memory_allocated() after each entry, and at peak_allocated_index they reach
 * the run's real max_memory_allocated() (the step log's peak). */
static void block_bytes_reach_real_peak(void **state)
{
    (void)state;
    fixture f;
    load(&f, "snap_train_default");
    const od_device_trace *tr = &f.snap->traces[0];
    size_t n = tr->n_entries;
    uint32_t *units = malloc(n * sizeof *units);
    assert_non_null(units);
    for (size_t i = 0; i < n; i++) units[i] = 0xdeadbeef; /* the replay fills every slot */
    f.opts.block_units_out = units;
    od_replay_result r;
    assert_int_equal(od_replay_snapshot(f.snap, &f.opts, &r, NULL), OD_OK);
    assert_true(od_replay_verified(&r));
    const uint64_t real_max = 5371063296ull;
    assert_int_equal(real_peak(&f), real_max);
    assert_int_equal(r.stats.peak_allocated_bytes, real_max);
    assert_true(r.peak_allocated_index < n);
    /* live block size by address: a small open-addressing table (addresses are never 0) */
    size_t cap = 1;
    while (cap < 4 * n) cap *= 2;
    uint64_t *key = calloc(cap, sizeof *key), *val = calloc(cap, sizeof *val);
    assert_true(key && val);
    uint64_t sum = 0, max = 0;
    size_t first_max = n;
    for (size_t i = 0; i < n; i++) {
        od_trace_entry t_v = od_trace_at(tr, i);
        const od_trace_entry *t = &t_v;
        uint64_t block = (uint64_t)units[i] * 512;
        if (t->action != OD_ACT_ALLOC) assert_int_equal(units[i], 0);
        size_t j = (size_t)(t->addr * 0x9e3779b97f4a7c15ull >> 20) & (cap - 1);
        if (t->action == OD_ACT_ALLOC && block) {
            /* never below the request */
            assert_true(block >= t->size);
            while (key[j] && key[j] != t->addr) j = (j + 1) & (cap - 1);
            key[j] = t->addr;
            val[j] = block;
            sum += block;
        } else if (t->action == OD_ACT_FREE_REQUESTED) {
            while (key[j] && key[j] != t->addr) j = (j + 1) & (cap - 1);
            assert_int_equal(key[j], t->addr);
            sum -= val[j];
            val[j] = 0; /* the slot stays: a later alloc at the address takes it again */
        }
        if (sum > max) {
            max = sum;
            first_max = i;
        }
    }
    assert_int_equal(max, real_max);
    assert_int_equal(first_max, r.peak_allocated_index);
    /* the final state agrees too */
    assert_int_equal(sum, r.stats.allocated_bytes);
    free(key);
    free(val);
    free(units);
    unload(&f);
}

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

/* od_replay_trace over entries built by hand. */
static od_status replay_entries(const od_trace_entry *e, size_t n, const od_replay_opts *o, od_replay_result *r)
{
    od_trace_store *st = od_trace_store_of(e, n);
    assert_non_null(st);
    od_device_trace tr;
    od_trace_store_view(st, 0, n, 0, &tr);
    od_status rc = od_replay_trace(&tr, o, r, NULL);
    od_trace_store_free(st);
    return rc;
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
    od_replay_opts o = { 0 };
    od_allocsim_config_default(&o.cfg);
    o.device = 0;
    od_replay_result r;
    assert_int_equal(replay_entries(e, 7, &o, &r), OD_OK);
    assert_int_equal(r.external_releases, 1);
    assert_int_equal(r.seg_recorded, 3);
    assert_int_equal(r.seg_matched, 3);
    assert_true(od_replay_verified(&r));
    /* without the release, the second alloc would have reused the cached block */
    e[4].action = OD_ACT_SNAPSHOT;
    e[5].action = OD_ACT_SNAPSHOT;
    assert_int_equal(replay_entries(e, 7, &o, &r), OD_OK);
    assert_int_equal(r.external_releases, 0);
    assert_int_equal(r.seg_recorded, 1);
    assert_int_equal(r.seg_simulated, 1);
}

/* A streamed snapshot (passes read the file again, or gzip's compact stream) replays to
 * exactly the held one's result, and several settings at once in threads give each what
 * a replay alone gives: on a complete trace with what-ifs judged by the run's own replay,
 * a private-pool trace, an OOM under a cap, and the wrapped 1 M-event trace. */
static void assert_same_result(const od_replay_result *x, const od_replay_result *y)
{
    /* the recorded entry beside a mismatch: only its action, address and size are set */
    assert_memory_equal(x, y, offsetof(od_replay_result, mismatch_recorded));
    assert_int_equal(x->mismatch_has_recorded, y->mismatch_has_recorded);
    if (x->mismatch_has_recorded) {
        assert_int_equal(x->mismatch_recorded.action, y->mismatch_recorded.action);
        assert_true(x->mismatch_recorded.addr == y->mismatch_recorded.addr);
        assert_true(x->mismatch_recorded.size == y->mismatch_recorded.size);
    }
    /* the model's event (its padding is the model's stack) */
    assert_int_equal(x->mismatch_has_simulated, y->mismatch_has_simulated);
    assert_int_equal(x->mismatch_simulated.kind, y->mismatch_simulated.kind);
    assert_true(x->mismatch_simulated.addr == y->mismatch_simulated.addr);
    assert_true(x->mismatch_simulated.size == y->mismatch_simulated.size);
    assert_true(x->mismatch_simulated.stream == y->mismatch_simulated.stream);
    assert_true(x->mismatch_simulated.pool == y->mismatch_simulated.pool);
    size_t tail = offsetof(od_replay_result, mismatch_has_simulated) + sizeof x->mismatch_has_simulated;
    assert_memory_equal((const char *)x + tail, (const char *)y + tail, sizeof *x - tail);
}

static void many_equals_one_by_one(void **state)
{
    (void)state;
    static const char *const names[] = { "frag_default", "snap_cudagraph", "snap_train_oom", "snap_train_long" };
    static const char *const whatifs[] = { "expandable_segments:True", "max_split_size_mb:64",
                                           "garbage_collection_threshold:0.6", "roundup_power2_divisions:4" };
    for (size_t f = 0; f < sizeof names / sizeof names[0]; f++) {
        fixture fx;
        load(&fx, names[f]);
        od_replay_opts opts[5];
        od_replay_result one[5], many[5], streamed[5];
        memset(opts, 0, sizeof opts);
        opts[0] = fx.opts;
        for (int k = 0; k < 4; k++) {
            opts[k + 1] = fx.opts;
            assert_int_equal(od_allocsim_config_parse(&opts[k + 1].cfg, whatifs[k], NULL), OD_OK);
        }
        od_error err;
        for (int k = 0; k < 5; k++) {
            memset(&one[k], 0xa5, sizeof one[k]); /* padding too: results are compared bytewise */
            assert_int_equal(od_replay_snapshot(fx.snap, &opts[k], &one[k], &err), OD_OK);
        }
        memset(many, 0xa5, sizeof many);
        assert_int_equal(od_replay_snapshot_many(fx.snap, opts, 5, 4, many, &err), OD_OK);
        /* the same file streamed */
        char path[256];
        snprintf(path, sizeof path, DIR "%s.pickle", names[f]);
        FILE *fp = fopen(path, "rb");
        if (!fp) {
            snprintf(path, sizeof path, DIR "%s.pickle.gz", names[f]);
            fp = fopen(path, "rb");
        }
        od_input *in = NULL;
        od_snapshot *ss = NULL;
        assert_int_equal(od_input_open_file(fp, &in, &err), OD_OK);
        assert_int_equal(od_snapshot_load_streamed(in, &ss, &err), OD_OK);
        memset(streamed, 0xa5, sizeof streamed);
        assert_int_equal(od_replay_snapshot_many(ss, opts, 5, 4, streamed, &err), OD_OK);
        for (int k = 0; k < 5; k++) {
            assert_same_result(&one[k], &many[k]);
            assert_same_result(&one[k], &streamed[k]);
        }
        /* and one by one from the streamed snapshot, a pass each */
        for (int k = 0; k < 5; k += 4) {
            od_replay_result r;
            memset(&r, 0xa5, sizeof r);
            assert_int_equal(od_replay_snapshot(ss, &opts[k], &r, &err), OD_OK);
            assert_same_result(&one[k], &r);
        }
        od_snapshot_free(ss);
        od_input_close(in);
        fclose(fp);
        unload(&fx);
    }
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
        cmocka_unit_test(snap_cudagraph),
        cmocka_unit_test(whatif_judged_by_own_replay),
        cmocka_unit_test(wrapped_whatif_unanswerable),
        cmocka_unit_test(block_bytes_reach_real_peak),
        cmocka_unit_test(settings_from_snapshot_match_alloc_conf),
        cmocka_unit_test(frag_default_without_cap),
        cmocka_unit_test(wrapped),
        cmocka_unit_test(cap_below_live_state),
        cmocka_unit_test(external_release),
        cmocka_unit_test(many_equals_one_by_one),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
