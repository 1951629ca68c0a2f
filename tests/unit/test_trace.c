/* test_trace.c - the trace model (trace.h) and the verdicts built on it, on real H200
 * fixtures (tests/data/snapshots) and hand-built snapshots (tests/data/synthetic, written
 * by tests/data/extra/make_synthetic.py). Expected figures come from each fixture's .json
 * (step_log peaks: torch.cuda.max_memory_allocated(); n_params) or from what the
 * hand-built trace was made to hold. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <cmocka.h>
#include "snapload.h"
#include <jansson.h>

#include "analyze/categorize.h"
#include "analyze/diagnose.h"
#include "analyze/summary.h"
#include "analyze/timeline.h"
#include "model/iterations.h"
#include "model/trace.h"

#define SNAP "tests/data/snapshots/"
#define SYN "tests/data/synthetic/"
#define MiB (1024ull * 1024ull)

static od_trace *open0(const od_snapshot *s)
{
    od_trace *t = NULL;
    od_error err;
    assert_int_equal(od_trace_open(s, 0, &t, &err), OD_OK);
    return t;
}

static od_diagnosis *diagnose_one(const char *name, od_snapshot *s)
{
    od_diag_input in = {name, OD_INPUT_SNAPSHOT, NULL, NULL, NULL, s, NULL, NULL};
    od_diagnosis *d = NULL;
    od_error err;
    assert_int_equal(od_diagnose(&in, 1, &d, &err), OD_OK);
    return d;
}

/* alloc 1 B, free it, alloc 500 B: the block peak (512 B) is first reached at entry 1, the
 * requested peak at entry 4; snapshot, doctor and the report's timeline agree. */
static void five_entries_one_peak(void **state)
{
    (void)state;
    od_snapshot *s = load_snapshot(SYN "five_entry.pickle");
    assert_int_equal(s->traces[0].n_entries, 5);
    od_summary *sum = NULL;
    od_error err;
    assert_int_equal(od_summarize(s, &sum, &err), OD_OK);
    const od_device_summary *dv = &sum->devices[0];
    assert_true(dv->trace->has_peak);
    assert_int_equal(dv->trace->peak_index, 1);
    assert_int_equal(dv->trace->peak_block_bytes, 512);
    assert_int_equal(dv->peak_requested_index, 4); /* requested bytes: 500 B at entry 4 */
    assert_int_equal(dv->peak_requested_bytes, 500);
    od_timeline *tl = NULL;
    assert_int_equal(od_timeline_build(s, dv, 100, 6, &tl, &err), OD_OK);
    assert_int_equal(tl->peak_time_us, od_trace_at(&s->traces[0], 1).time_us);
    assert_int_equal(tl->peak_live_bytes, 512);
    od_timeline_free(tl);
    od_diagnosis *d = diagnose_one("five", s);
    assert_int_equal(d->n_snapshots, 1);
    assert_int_equal(d->snapshots[0].figures->trace->peak_index, 1);
    assert_int_equal(d->snapshots[0].categories->peak_entry, 1);
    od_diagnosis_free(d);
    od_summary_free(sum);
    od_snapshot_free(s);
}

static uint64_t step_log_max_peak(const char *json_path)
{
    json_error_t je;
    json_t *doc = json_load_file(json_path, 0, &je);
    assert_non_null(doc);
    json_t *log = json_object_get(doc, "step_log");
    uint64_t m = 0;
    for (size_t i = 0; i < json_array_size(log); i++) {
        uint64_t p = (uint64_t)json_integer_value(json_object_get(json_array_get(log, i), "peak"));
        m = p > m ? p : m;
    }
    json_decref(doc);
    return m;
}

/* The peak of block bytes is max_memory_allocated() to the byte on every complete
 * training trace whose replay reproduces the run. */
static void peak_is_max_memory_allocated(void **state)
{
    (void)state;
    const char *names[] = {"snap_train_default", "snap_train_expandable", "snap_train_maxsplit", "snap_train_big"};
    for (size_t k = 0; k < 4; k++) {
        char p[256], j[256];
        snprintf(p, sizeof p, SNAP "%s.pickle%s", names[k], k == 3 ? ".gz" : "");
        snprintf(j, sizeof j, SNAP "%s.json", names[k]);
        od_snapshot *s = load_snapshot(p);
        od_trace *t = open0(s);
        assert_true(t->blocks_from_replay);
        uint64_t want = step_log_max_peak(j);
        assert_true(want > 0);
        if (t->peak_block_bytes != want)
            fail_msg("%s: peak %llu, max_memory_allocated %llu", names[k], (unsigned long long)t->peak_block_bytes,
                     (unsigned long long)want);
        assert_true(t->peak_requested_at_peak <= t->peak_block_bytes);
        od_trace_free(t);
        od_snapshot_free(s);
    }
}

/* A run that died of OOM under a cap replays under the most it reserved: its peak is the
 * real max_memory_allocated() too (memory_stats' allocated_bytes.all.peak; the
 * memory_summary's "Allocated memory ... Peak Usage" in MiB for frag_*). */
static void oom_runs_peak_exactly(void **state)
{
    (void)state;
    json_error_t je;
    json_t *doc = json_load_file(SNAP "snap_train_oom.json", 0, &je);
    assert_non_null(doc);
    uint64_t want = (uint64_t)json_integer_value(
        json_object_get(json_object_get(doc, "memory_stats"), "allocated_bytes.all.peak"));
    json_decref(doc);
    assert_true(want > 0);
    od_snapshot *s = load_snapshot(SNAP "snap_train_oom.pickle");
    od_trace *t = open0(s);
    assert_true(t->blocks_from_replay);
    assert_int_equal(t->peak_block_bytes, want);
    od_trace_free(t);
    od_snapshot_free(s);
    const char *frag[] = {"frag_default", "frag_default_70"};
    const uint64_t summary_peak_mib[] = {1612, 1885}; /* their memory_summary tables */
    for (int k = 0; k < 2; k++) {
        char p[256];
        snprintf(p, sizeof p, SNAP "%s.pickle", frag[k]);
        s = load_snapshot(p);
        t = open0(s);
        assert_true(t->blocks_from_replay);
        assert_int_equal(t->peak_block_bytes / MiB, summary_peak_mib[k]);
        od_trace_free(t);
        od_snapshot_free(s);
    }
}

/* A list filled on two streams across iterations and released before the trace ends is
 * bounded accumulation; the same list kept to the end is a leak. */
static void accumulate_then_free_is_no_leak(void **state)
{
    (void)state;
    od_snapshot *s = load_snapshot(SYN "multistream_accumulate.pickle");
    od_diagnosis *d = diagnose_one("acc", s);
    assert_int_not_equal(d->verdict, OD_VERDICT_LEAK);
    const od_iterations *it = d->snapshots[0].iterations;
    assert_non_null(it);
    assert_true(it->n_survivors >= 1);
    assert_int_equal(it->survivors[0].held_at_end_bytes, 0);
    assert_int_equal(it->survivors[0].bytes_per_iteration, 8 * MiB);
    assert_true(it->survivors[0].released_index != SIZE_MAX);
    assert_true(d->snapshots[0].side_stream_free_bytes > 0); /* the side stream's own cache */
    /* Its peak falls after backward: every parameter's gradient (made without frames,
     * sized like it, alive until the step) is a gradient, and no more than that. */
    const od_categories *c = d->snapshots[0].categories;
    assert_true(c->bytes[OD_CAT_GRADIENTS] > 0);
    assert_int_equal(c->bytes[OD_CAT_GRADIENTS], c->bytes[OD_CAT_PARAMETERS]);
    od_diagnosis_free(d);
    od_snapshot_free(s);

    s = load_snapshot(SYN "leak_to_end.pickle");
    d = diagnose_one("leak", s);
    assert_int_equal(d->verdict, OD_VERDICT_LEAK);
    assert_non_null(strstr(d->site, "train.py:42"));
    od_diagnosis_free(d);
    od_snapshot_free(s);
}

static uint64_t n_params_of(const char *json_path)
{
    FILE *f = fopen(json_path, "rb");
    assert_non_null(f);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    /* top-level "n_params": N, or inside the case's Python repr: 'n_params': N */
    char *p = strstr(buf, "n_params");
    assert_non_null(p);
    p += 8;
    while (*p && (*p < '0' || *p > '9'))
        p++;
    return strtoull(p, NULL, 10);
}

/* Gradients are parameter gradients only (never more than the parameters), the logits'
 * gradient goes with the logits, and the two 32 MiB cuBLAS workspaces are workspace. */
static void categories_at_the_peak(void **state)
{
    (void)state;
    /* leak_eval_no_grad trains the same GPT-2 6 layers as snap_train_default */
    const char *names[] = {"snap_train_default.pickle", "snap_train_big.pickle.gz", "leak_eval_no_grad.pickle",
                           "snap_train_expandable.pickle"};
    const char *jsons[] = {"snap_train_default.json", "snap_train_big.json", "snap_train_default.json",
                           "snap_train_expandable.json"};
    for (size_t k = 0; k < 4; k++) {
        char p[256], j[256];
        snprintf(p, sizeof p, SNAP "%s", names[k]);
        snprintf(j, sizeof j, SNAP "%s", jsons[k]);
        double params = (double)n_params_of(j);
        od_snapshot *s = load_snapshot(p);
        od_trace *t = open0(s);
        od_categories *c = NULL;
        od_error err;
        assert_int_equal(od_categorize(t, SIZE_MAX, &c, &err), OD_OK);
        assert_int_equal(c->peak_entry, t->peak_index);
        assert_int_equal(c->total_bytes, t->peak_block_bytes);
        assert_true(fabs((double)c->bytes[OD_CAT_PARAMETERS] - 4 * params) < 0.01 * 4 * params);
        assert_true((double)c->bytes[OD_CAT_GRADIENTS] <= 4 * params);
        assert_int_equal(c->bytes[OD_CAT_WORKSPACE], 64 * MiB);
        assert_true(c->bytes[OD_CAT_LOGITS_AND_LOSS] > 0);
        assert_true(c->bytes[OD_CAT_UNKNOWN] < c->total_bytes / 100);
        if (k == 0) {
            /* The peak falls as backward starts: the logits' gradient, two fp32 blocks of
             * batch 8 x seq 512 x vocab 50257 x 4 B made by the autograd engine, goes with
             * the logits, not with the gradients. */
            double want = 2.0 * 8 * 512 * 50257 * 4;
            int found = 0;
            for (size_t i = 0; i < c->n_top_stacks; i++)
                if (c->top_stacks[i].stack == 0 && c->top_stacks[i].category == OD_CAT_LOGITS_AND_LOSS) {
                    found = 1;
                    assert_int_equal(c->top_stacks[i].count, 2);
                    assert_true(fabs((double)c->top_stacks[i].bytes - want) < 0.002 * want);
                }
            assert_true(found);
        }
        od_categories_free(c);
        od_trace_free(t);
        od_snapshot_free(s);
    }
}

/* generate() without a KV cache: decode steps found, each recomputing the sequence, and
 * the weights (allocated before the ring buffer wrapped) inferred: bf16, 2 B a parameter. */
static void inference_trace(void **state)
{
    (void)state;
    od_snapshot *s = load_snapshot(SNAP "snap_infer_llama.pickle.gz");
    od_diagnosis *d = diagnose_one("infer", s);
    const od_snapshot_findings *f = &d->snapshots[0];
    assert_true(f->inference.is_inference);
    assert_true(f->inference.decode_steps >= 100);
    assert_true(f->inference.recomputes_each_step);
    assert_int_equal(f->inference.kv_cache_bytes_per_token, 0);
    double want = 2.0 * (double)n_params_of(SNAP "snap_infer_llama.json");
    assert_true(fabs((double)f->inference.weights_bytes - want) < 0.001 * want);
    assert_true(f->categories->bytes[OD_CAT_UNKNOWN] < f->categories->total_bytes / 100);
    od_diagnosis_free(d);
    od_snapshot_free(s);

    s = load_snapshot(SNAP "snap_train_default.pickle"); /* training: no inference */
    d = diagnose_one("train", s);
    assert_false(d->snapshots[0].inference.is_inference);
    od_diagnosis_free(d);
    od_snapshot_free(s);
}

/* generate() with a DynamicCache: live memory grows by the cache's bytes per position
 * (2 layers x K,V x batch 4 x 4 kv heads x head_dim 64 x 2 B = 8192 B, as the generator
 * builds it) and nothing is recomputed. */
static void inference_with_kv_cache(void **state)
{
    (void)state;
    od_snapshot *s = load_snapshot(SYN "generate_kv.pickle");
    od_diagnosis *d = diagnose_one("kv", s);
    const od_inference *inf = &d->snapshots[0].inference;
    assert_true(inf->is_inference);
    assert_int_equal(inf->decode_steps, 40);
    assert_int_equal(inf->kv_cache_bytes_per_token, 2 * 2 * 4 * 4 * 64 * 2);
    assert_false(inf->recomputes_each_step);
    assert_true(inf->weights_bytes > 0);
    od_diagnosis_free(d);
    od_snapshot_free(s);
}

/* One training step (the 5th) runs a 3x longer sequence: it is named, with the sites
 * whose allocations grew 3x. */
static void spike_named(void **state)
{
    (void)state;
    od_snapshot *s = load_snapshot(SYN "spike.pickle");
    od_diagnosis *d = diagnose_one("spike", s);
    const od_snapshot_findings *f = &d->snapshots[0];
    assert_true(f->have_spike);
    assert_int_equal(f->spike_iteration + 2, 5);
    assert_true(f->spike_peak_bytes > f->typical_peak_bytes + f->typical_peak_bytes / 4);
    assert_non_null(strstr(f->spike_sites, "train.py:26"));
    assert_non_null(strstr(f->spike_sites, "(16.00 MiB -> 48.00 MiB)"));
    assert_int_not_equal(d->verdict, OD_VERDICT_LEAK);
    od_diagnosis_free(d);
    od_snapshot_free(s);
    s = load_snapshot(SNAP "snap_train_default.pickle"); /* steady steps: no spike */
    d = diagnose_one("steady", s);
    assert_false(d->snapshots[0].have_spike);
    od_diagnosis_free(d);
    od_snapshot_free(s);
}

/* The failing line and what holds the memory are named apart. */
static void failing_line_vs_holders(void **state)
{
    (void)state;
    od_snapshot *s = load_snapshot(SNAP "snap_train_oom.pickle");
    od_diagnosis *d = diagnose_one("oom", s);
    const od_snapshot_findings *f = &d->snapshots[0];
    assert_true(f->have_oom);
    assert_true(f->held_bytes[0] > 0);
    assert_string_not_equal(f->held_site[0], f->oom_site);
    assert_true(f->held_bytes[0] + f->held_bytes[1] <= f->oom_allocated_bytes);
    /* full stacks and module paths at the peak: the largest stack runs through the
     * decoder layer's forwards (modeling_llama.py), its frames innermost first */
    const od_categories *c = f->categories;
    assert_true(c->n_top_stacks > 0 && c->n_top_modules > 0);
    assert_true(c->top_stacks[0].bytes <= c->total_bytes);
    for (size_t i = 1; i < c->n_top_stacks; i++)
        assert_true(c->top_stacks[i].bytes <= c->top_stacks[i - 1].bytes);
    uint32_t nfr;
    od_snapshot_stack(s, c->top_stacks[0].stack, &nfr);
    assert_true(nfr >= 3);
    assert_non_null(strstr(c->top_modules[0].path, "modeling_llama.py:"));
    assert_non_null(strstr(c->top_modules[0].path, " > "));
    od_diagnosis_free(d);
    od_snapshot_free(s);
}

/* snap_cudagraph: the capture's private pool, (1, 0) as PyTorch numbers a graph's own
 * pool, is named; the side stream of the warm-up passes keeps its own cache. */
static void graph_pool_named(void **state)
{
    (void)state;
    od_snapshot *s = load_snapshot(SNAP "snap_cudagraph.pickle");
    od_diagnosis *d = diagnose_one("graph", s);
    const od_snapshot_findings *f = &d->snapshots[0];
    assert_int_equal(f->graph_pools, 1);
    assert_int_equal(f->graph_pool_id[0], 1);
    assert_int_equal(f->graph_pool_id[1], 0);
    assert_true(f->graph_pool_reserved_bytes > 0);
    assert_true(f->streams >= 2);
    int named = 0;
    for (size_t i = 0; i < d->n_evidence; i++)
        named += strstr(d->evidence[i].text, "CUDA-graph private pool") != NULL;
    assert_int_equal(named, 1);
    od_diagnosis_free(d);
    od_snapshot_free(s);
}

static const od_snapshot *ins_snapshot(const od_diagnosis *d, const od_diag_input *in, size_t k)
{
    return in[d->snapshots[k].input].snapshot;
}

/* Several snapshots: the highest by peak, never also the lowest, whatever the order. */
static void highest_of_several(void **state)
{
    (void)state;
    od_snapshot *a = load_snapshot(SNAP "snap_train_default.pickle");
    od_snapshot *b = load_snapshot(SNAP "frag_default.pickle");
    for (int order = 0; order < 2; order++) {
        od_diag_input in[2] = {{"a", OD_INPUT_SNAPSHOT, NULL, NULL, NULL, order ? b : a, NULL, NULL},
                               {"b", OD_INPUT_SNAPSHOT, NULL, NULL, NULL, order ? a : b, NULL, NULL}};
        od_diagnosis *d = NULL;
        od_error err;
        assert_int_equal(od_diagnose(in, 2, &d, &err), OD_OK);
        assert_int_not_equal(d->highest_snapshot, d->lowest_snapshot);
        assert_ptr_equal(ins_snapshot(d, in, d->highest_snapshot), a);
        od_diagnosis_free(d);
    }
    od_snapshot_free(a);
    od_snapshot_free(b);
}

/* The free space the failing request met: the layout just before snap_train_oom's OOM
 * entry against the allocator replay's own state at its OOM (oomdoc replay --json: 1,188,352
 * cached free bytes, a largest free block of 524,288). The final segments, after the run
 * freed its activations, say 1.40 MiB and 352 MiB instead. */
static void free_space_before_the_oom(void **state)
{
    (void)state;
    od_snapshot *s = load_snapshot("tests/data/snapshots/snap_train_oom.pickle");
    od_trace *t = NULL;
    od_error err;
    assert_int_equal(od_trace_open(s, 0, &t, &err), OD_OK);
    size_t at = 0;
    for (size_t i = 0; i < t->n_entries && !at; i++)
        if (od_trace_action(t->entries, i) == OD_ACT_OOM)
            at = i;
    assert_int_equal(at, 500);
    od_layout *l = NULL;
    assert_int_equal(od_layout_at(t, at - 1, &l, &err), OD_OK);
    uint64_t stranded = 0, largest = 0;
    od_layout_free_space(l, &stranded, &largest);
    assert_true(stranded == 1188352);
    assert_true(largest == 524288);
    od_layout_free(l);
    od_trace_free(t);
    od_snapshot_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(five_entries_one_peak),
        cmocka_unit_test(peak_is_max_memory_allocated),
        cmocka_unit_test(oom_runs_peak_exactly),
        cmocka_unit_test(accumulate_then_free_is_no_leak),
        cmocka_unit_test(categories_at_the_peak),
        cmocka_unit_test(inference_trace),
        cmocka_unit_test(inference_with_kv_cache),
        cmocka_unit_test(spike_named),
        cmocka_unit_test(failing_line_vs_holders),
        cmocka_unit_test(highest_of_several),
        cmocka_unit_test(graph_pool_named),
        cmocka_unit_test(free_space_before_the_oom),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
