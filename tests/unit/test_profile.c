/* test_profile.c - profiler records (tests/data/profiler, a real H200 run) read into the
 * profile model, with expected figures taken from the fixtures' own ground truth
 * (torch_prof_run.json, the JSON files read here with jansson) or recomputed here; and the
 * streaming JSON reader, pprof reader and truncated inputs on their own. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "slurp.h"
#include <jansson.h>
#include <zlib.h>

#include "analyze/diagnose.h"
#include "base/jsonstream.h"
#include "read/pprof.h"
#include "read/profile.h"
#include "render/profilesvg.h"

#define DIR "tests/data/profiler/"

static od_status load_path(const char *path, od_profile **p, od_error *err)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    od_input *in = NULL;
    od_status st = od_input_open_file(f, &in, err);
    if (!st)
        st = od_profile_load(in, p, err);
    od_input_close(in);
    fclose(f);
    return st;
}

static od_status load_mem(const void *data, size_t n, od_profile **p, od_error *err)
{
    od_input *in = NULL;
    od_status st = od_input_open_memory(data, n, &in, err);
    if (!st)
        st = od_profile_load(in, p, err);
    od_input_close(in);
    return st;
}

static od_profile *must_load(const char *path)
{
    od_profile *p = NULL;
    od_error err;
    od_status st = load_path(path, &p, &err);
    if (st)
        fprintf(stderr, "%s: %s\n", path, err.msg);
    assert_int_equal(st, OD_OK);
    return p;
}

static json_t *json_file(const char *path)
{
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    assert_non_null(j);
    return j;
}

static uint64_t real_peak(void)
{
    json_t *j = json_file(DIR "torch_prof_run.json");
    uint64_t v = (uint64_t)json_integer_value(json_object_get(j, "peak_allocated"));
    json_decref(j);
    assert_true(v > 0);
    return v;
}

/* ---------- PyTorch ---------- */

static void test_trace_peak_is_the_real_peak(void **state)
{
    (void)state;
    od_profile *p = must_load(DIR "torch_profiler_trace.json.gz");
    assert_int_equal(p->kind, OD_PROFILE_TORCH_TRACE);
    assert_int_equal(p->peak_allocated_bytes, real_peak());
    assert_int_equal(p->allocated_bytes[p->peak_index], p->peak_allocated_bytes);
    assert_int_equal(p->device, 0);
    /* the run trained 3 steps: three Optimizer.step annotations */
    assert_int_equal(p->n_steps, 3);
    assert_int_equal(p->peak_phase, OD_PHASE_BACKWARD);
    assert_true(p->with_stack);
    /* time-sorted, allocated never above reserved */
    for (size_t i = 1; i < p->n_points; i++)
        assert_true(p->time_us[i] >= p->time_us[i - 1]);
    for (size_t i = 0; i < p->n_points; i++)
        assert_true(p->allocated_bytes[i] <= p->reserved_bytes[i]);
    assert_int_equal(p->peak_tracked_bytes + p->peak_untracked_bytes, p->peak_allocated_bytes);
    /* phases tile the timeline in order */
    assert_true(p->n_spans >= 9);
    for (size_t i = 1; i < p->n_spans; i++)
        assert_true(p->spans[i].start_us >= p->spans[i - 1].end_us - 1e-6);
    /* key_averages prints aten::empty_strided first with 7.11 GB Self CUDA Mem */
    assert_string_equal(p->ops_self.v[0].name, "aten::empty_strided");
    assert_true(p->ops_self.v[0].bytes > (int64_t)(7.105 * 1073741824.0) &&
                p->ops_self.v[0].bytes < (int64_t)(7.115 * 1073741824.0));
    od_profile_free(p);
}

static void test_timeline_composition(void **state)
{
    (void)state;
    od_profile *p = must_load(DIR "torch_memory_timeline.json");
    assert_int_equal(p->kind, OD_PROFILE_TORCH_TIMELINE);
    /* recompute the peak row from the file with jansson */
    json_t *j = json_file(DIR "torch_memory_timeline.json");
    json_t *rows = json_array_get(j, 1);
    uint64_t best = 0;
    size_t bi = 0;
    for (size_t i = 0; i < json_array_size(rows); i++) {
        uint64_t s = 0;
        for (size_t c = 1; c < 9; c++)
            s += (uint64_t)json_integer_value(json_array_get(json_array_get(rows, i), c));
        if (s > best) {
            best = s;
            bi = i;
        }
    }
    assert_int_equal(p->n_points, json_array_size(rows));
    assert_int_equal(p->peak_allocated_bytes, best);
    assert_int_equal(p->peak_index, bi);
    uint64_t sum = 0;
    for (int c = 0; c < OD_PCAT_COUNT; c++) {
        assert_int_equal(p->peak_category_bytes[c],
                         (uint64_t)json_integer_value(json_array_get(json_array_get(rows, bi), (size_t)c + 1)));
        sum += p->peak_category_bytes[c];
    }
    json_decref(j);
    assert_int_equal(sum, p->peak_allocated_bytes);
    uint64_t real = real_peak();
    assert_true(p->peak_allocated_bytes <= real + 512 && p->peak_allocated_bytes + 512 >= real);
    assert_string_equal(od_profile_category_name(OD_PCAT_PARAMETER), "parameter");
    assert_string_equal(od_profile_category_name(OD_PCAT_UNKNOWN), "unknown");
    od_profile_free(p);
}

static void test_key_averages_table(void **state)
{
    (void)state;
    od_profile *p = must_load(DIR "torch_key_averages.txt");
    assert_int_equal(p->kind, OD_PROFILE_TORCH_TABLE);
    assert_int_equal(p->ops_self.n, 15);
    assert_string_equal(p->ops_self.v[0].name, "aten::empty_strided");
    /* "7.11 GB" as torch prints it: 1024-based */
    assert_int_equal(p->ops_self.v[0].bytes, (int64_t)(7.11 * 1073741824.0 + 0.5));
    assert_int_equal(p->ops_self.v[0].count, 743);
    od_profile_free(p);
}

/* ---------- JAX ---------- */

static void test_jax_profile_and_stats(void **state)
{
    (void)state;
    od_profile *p = must_load(DIR "jax_device_memory.prof");
    assert_int_equal(p->kind, OD_PROFILE_JAX_PPROF);
    /* 14 buffers on cuda:0: 8 B + 32 MiB + 6 x 64 MiB + 5 x 64 MiB + 64 MiB, decoded
     * independently from the protobuf (tests/crosscheck/check_profile.py does it too) */
    assert_int_equal(p->live_bytes, 8ULL + (32ULL << 20) + 6 * (64ULL << 20) + 5 * (64ULL << 20) + (64ULL << 20));
    int64_t kinds = 0;
    for (size_t i = 0; i < p->by_kind.n; i++)
        kinds += p->by_kind.v[i].bytes;
    assert_int_equal((uint64_t)kinds, p->live_bytes);
    assert_string_equal(p->by_kind.v[0].name, "buffer");
    /* the user's own script, not jax internals, is named */
    assert_non_null(strstr(p->by_source.v[0].name, "jax_job.py"));
    od_profile_free(p);

    p = must_load(DIR "jax_memory_stats.json");
    assert_int_equal(p->kind, OD_PROFILE_JAX_STATS);
    json_t *j = json_file(DIR "jax_memory_stats.json");
    json_t *ms = json_object_get(j, "memory_stats");
    assert_true(p->stats.has_bytes_in_use && p->stats.has_peak_bytes_in_use &&
                p->stats.has_largest_free_block_bytes && p->stats.has_bytes_limit);
    assert_int_equal(p->stats.bytes_in_use, json_integer_value(json_object_get(ms, "bytes_in_use")));
    assert_int_equal(p->stats.peak_bytes_in_use, json_integer_value(json_object_get(ms, "peak_bytes_in_use")));
    assert_int_equal(p->stats.largest_free_block_bytes, json_integer_value(json_object_get(ms, "largest_free_block_bytes")));
    assert_int_equal(p->stats.bytes_limit, json_integer_value(json_object_get(ms, "bytes_limit")));
    json_decref(j);
    od_profile_free(p);
}

static void test_bfc_log(void **state)
{
    (void)state;
    od_profile *p = must_load(DIR "jax_bfc.log");
    assert_int_equal(p->kind, OD_PROFILE_BFC_LOG);
    assert_true(p->bfc.has_request && p->bfc.has_summary);
    assert_int_equal(p->bfc.requested_bytes, 400000000000ULL);
    assert_string_equal(p->bfc.allocator, "GPU_0_bfc");
    assert_int_equal(p->bfc.bar_cells, 100);
    od_profile_free(p);

    /* a constructed log with the chunk and Stats lines TensorFlow prints */
    const char *log =
        "W tensorflow/core/common_runtime/bfc_allocator.cc:462] Allocator (GPU_0_bfc) ran out of memory trying to allocate 3.00MiB (rounded to 3145728)requested by op Foo\n"
        "I bfc_allocator.cc:1036] InUse at 7f0000000000 of size 1048576 next 1\n"
        "I bfc_allocator.cc:1036] Free  at 7f0000100000 of size 2097152 next 2\n"
        "I bfc_allocator.cc:1036] InUse at 7f0000300000 of size 1048576 next 3\n"
        "I bfc_allocator.cc:1036] Free  at 7f0000400000 of size 1048576 next 4\n"
        "I bfc_allocator.cc:1095] Stats: \n"
        "Limit:                      5242880\n"
        "InUse:                      2097152\n"
        "MaxInUse:                   4194304\n";
    od_error err;
    assert_int_equal(load_mem(log, strlen(log), &p, &err), OD_OK);
    assert_int_equal(p->bfc.requested_bytes, 3145728);
    assert_int_equal(p->bfc.n_free_chunks, 2);
    assert_int_equal(p->bfc.free_chunk_bytes, 3145728);
    assert_int_equal(p->bfc.largest_free_chunk_bytes, 2097152);
    assert_int_equal(p->bfc.in_use_chunk_bytes, 2097152);
    assert_int_equal(p->bfc.limit_bytes, 5242880);
    assert_int_equal(p->bfc.in_use_bytes, 2097152);
    assert_int_equal(p->bfc.max_in_use_bytes, 4194304);
    od_profile_free(p);
}

/* ---------- bad input ---------- */

/* Every prefix of the memory timeline is an error with an offset inside the prefix. */
static void test_truncated_timeline(void **state)
{
    (void)state;
    size_t n;
    char *buf = slurp(DIR "torch_memory_timeline.json", &n);
    for (size_t cut = 1; cut < 30000 && cut < n; cut += 37) {
        od_profile *p = NULL;
        od_error err;
        od_status st = load_mem(buf, cut, &p, &err);
        assert_int_not_equal(st, OD_OK);
        assert_null(p);
        assert_true(err.has_offset);
        assert_true(err.offset <= cut);
    }
    free(buf);
}

/* Prefixes of the decompressed pprof: never a crash; an error points inside the data. */
static void test_truncated_pprof(void **state)
{
    (void)state;
    size_t n;
    char *gz = slurp(DIR "jax_device_memory.prof", &n);
    od_input *in = NULL;
    od_error err;
    assert_int_equal(od_input_open_memory(gz, n, &in, &err), OD_OK);
    unsigned char raw[8192];
    size_t rn = 0, got;
    while ((got = od_input_read(in, raw + rn, sizeof raw - rn)) > 0)
        rn += got;
    od_input_close(in);
    free(gz);
    assert_true(rn > 1000 && rn < sizeof raw);
    size_t failures = 0;
    for (size_t cut = 1; cut < rn; cut++) {
        od_pprof *pp = NULL;
        od_status st = od_pprof_parse(raw, cut, &pp, &err);
        if (st) {
            failures++;
            assert_true(!err.has_offset || err.offset <= cut);
            assert_null(pp);
        }
        od_pprof_free(pp);
    }
    assert_true(failures > rn / 2);
}

static void test_garbage(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "", "hello world\n", "{\"a\": 1}", "[1, 2]", "[[1], [[0,1,2,3,4,5,6,7,8], [0]]]",
        "{\"traceEvents\": 5}", "{\"traceEvents\": [{\"name\": \"[memory]\", \"ts\": 1}]}",
        "{\"bytes_in_use\": 1.5}", "{\"traceEvents\": [", "{\"traceEvents\": [{\"name\": \"\\ud800\"}]}",
        "{\"traceEvents\": [] } x",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        od_profile *p = NULL;
        od_error err;
        od_status st = load_mem(bad[i], strlen(bad[i]), &p, &err);
        if (st == OD_OK)
            fprintf(stderr, "accepted: %s\n", bad[i]);
        assert_int_not_equal(st, OD_OK);
        assert_true(err.has_offset);
    }
    /* deep nesting is refused, not recursed into */
    size_t depth = 100000;
    char *deep = malloc(depth + 32);
    assert_non_null(deep);
    strcpy(deep, "{\"traceEvents\": [");
    size_t k = strlen(deep);
    memset(deep + k, '[', depth);
    od_profile *p = NULL;
    od_error err;
    assert_int_equal(load_mem(deep, k + depth, &p, &err), OD_ERR_LIMIT);
    free(deep);
}

/* ---------- the stream reader itself ---------- */

static void test_jsonstream(void **state)
{
    (void)state;
    const char *doc = " {\"a\\u00e9\\n\": [1.0005, -2, 3e2, true, null, {\"x\": \"\\ud83d\\ude00\"}], \"b\": 5195515170529.007}";
    od_input *in = NULL;
    od_error err;
    assert_int_equal(od_input_open_memory(doc, strlen(doc), &in, &err), OD_OK);
    /* the first 3 bytes come as an already-read prefix, as od_profile_load hands them */
    char head[3];
    assert_int_equal(od_input_read(in, head, 3), 3);
    od_js *js = NULL;
    assert_int_equal(od_js_open(in, head, 3, &js, &err), OD_OK);
    assert_int_equal(od_js_begin_object(js, &err), OD_OK);
    const char *k;
    size_t kl;
    assert_int_equal(od_js_next_key(js, &k, &kl, &err), 1);
    assert_int_equal(kl, 4);
    assert_memory_equal(k, "a\xc3\xa9\n", 4);
    assert_int_equal(od_js_begin_array(js, &err), OD_OK);
    od_js_number n;
    assert_int_equal(od_js_next_element(js, &err), 1);
    assert_int_equal(od_js_number_read(js, &n, &err), OD_OK);
    assert_false(n.is_int);
    assert_true(n.milli_ok);
    assert_int_equal(n.milli, 1001);   /* 1.0005 -> 1000.5 rounds up */
    assert_int_equal(od_js_next_element(js, &err), 1);
    assert_int_equal(od_js_number_read(js, &n, &err), OD_OK);
    assert_true(n.is_int);
    assert_int_equal(n.i, -2);
    assert_int_equal(n.milli, -2000);
    assert_int_equal(od_js_next_element(js, &err), 1);
    assert_int_equal(od_js_number_read(js, &n, &err), OD_OK);
    assert_false(n.is_int);
    assert_true(n.value == 300.0);
    assert_int_equal(od_js_next_element(js, &err), 1);
    assert_int_equal(od_js_peek(js), OD_JS_TRUE);
    assert_int_equal(od_js_skip(js, &err), OD_OK);
    assert_int_equal(od_js_next_element(js, &err), 1);
    assert_int_equal(od_js_skip(js, &err), OD_OK);
    assert_int_equal(od_js_next_element(js, &err), 1);
    assert_int_equal(od_js_begin_object(js, &err), OD_OK);
    assert_int_equal(od_js_next_key(js, &k, &kl, &err), 1);
    const char *s;
    size_t sl;
    assert_int_equal(od_js_string(js, &s, &sl, &err), OD_OK);
    assert_int_equal(sl, 4);
    assert_memory_equal(s, "\xf0\x9f\x98\x80", 4);
    assert_int_equal(od_js_next_key(js, &k, &kl, &err), 0);
    assert_int_equal(od_js_next_element(js, &err), 0);
    assert_int_equal(od_js_next_key(js, &k, &kl, &err), 1);
    assert_int_equal(od_js_number_read(js, &n, &err), OD_OK);
    /* a profiler timestamp keeps its nanoseconds exactly */
    assert_int_equal(n.milli, 5195515170529007LL);
    assert_int_equal(od_js_next_key(js, &k, &kl, &err), 0);
    assert_int_equal(od_js_end(js, &err), OD_OK);
    od_js_close(js);
    od_input_close(in);
}

static void test_detect(void **state)
{
    (void)state;
    assert_int_equal(od_profile_detect("\n  {\n \"schemaVersion\": 1, \"traceEvents\": [", 40), OD_PROFILE_TORCH_TRACE);
    assert_int_equal(od_profile_detect("[[1, 2], [[0", 12), OD_PROFILE_TORCH_TIMELINE);
    assert_int_equal(od_profile_detect("{\"bytes_in_use\": 5}", 19), OD_PROFILE_JAX_STATS);
    assert_int_equal(od_profile_detect("\x0a\x04\x08\x01\x10\x02", 6), OD_PROFILE_JAX_PPROF);
    assert_int_equal(od_profile_detect("\nhello", 6), -1);
    assert_int_equal(od_profile_detect("step,allocated\n1,2\n", 19), -1);
}

/* The chart: one band per category that has memory, the trace's phases lined up on the
 * timeline's clock (the first backward starts where the trace says, relative to the
 * timeline's first point), and a bounded size. */
static void test_svg(void **state)
{
    (void)state;
    od_profile *tl = must_load(DIR "torch_memory_timeline.json");
    od_profile *tr = must_load(DIR "torch_profiler_trace.json.gz");
    assert_true(tl->has_epoch && tr->has_epoch);
    /* both files start at the same instant of the same run (to the microsecond) */
    assert_true(tr->origin_epoch_us - tl->origin_epoch_us < 1.0 && tl->origin_epoch_us - tr->origin_epoch_us < 1.0);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    od_error err;
    assert_int_equal(od_profile_svg_write(f, tl, tr, 500, "t-1", 0, &err), OD_OK);
    fclose(f);
    assert_true(len > 1000 && len < 200000);
    size_t bands = 0, shaded = 0;
    for (const char *q = buf; (q = strstr(q, "<polygon")); q++)
        bands++;
    for (const char *q = buf; (q = strstr(q, "fill-opacity=\"0.16\"")); q++)
        shaded++;
    size_t want_bands = 0;
    for (int c = 0; c < OD_PCAT_COUNT; c++) {
        int any = 0;
        for (size_t i = 0; i < tl->n_points && !any; i++)
            any = tl->category_bytes[c][i] != 0;
        want_bands += any;
    }
    assert_true(bands >= 1 && bands <= want_bands);
    size_t want_shaded = 0;
    for (size_t i = 0; i < tr->n_spans; i++)
        want_shaded += tr->spans[i].phase != OD_PHASE_OTHER;
    assert_int_equal(shaded, want_shaded);
    assert_non_null(strstr(buf, "peak 3.59 GiB"));
    /* inline in a page: an id, and no URL of any kind (not even the SVG namespace) */
    assert_non_null(strstr(buf, "<svg id=\"t-1\""));
    assert_null(strstr(buf, "http"));
    free(buf);
    /* a profile without a timeline is refused */
    od_profile empty;
    memset(&empty, 0, sizeof empty);
    f = open_memstream(&buf, &len);
    assert_int_equal(od_profile_svg_write(f, &empty, NULL, 0, NULL, 1, &err), OD_ERR_ARG);
    fclose(f);
    free(buf);
    od_profile_free(tl);
    od_profile_free(tr);
}

/* doctor's use: a JAX OOM message without pool figures, completed by memory_stats. The
 * 400000000000-byte request (the log's "rounded to") exceeds the 112583507968-byte limit
 * (jax_memory_stats.json): capacity. Against a limit with room but a smaller largest free
 * block, the same request is fragmentation. */
static void test_diagnose_with_profiles(void **state)
{
    (void)state;
    size_t n;
    char *log = slurp(DIR "jax_bfc.log", &n);
    od_triage *t = NULL;
    od_error err;
    assert_int_equal(od_triage_parse(log, n, &t, &err), OD_OK);
    assert_true(t->n_reports >= 1);
    od_profile *stats = must_load(DIR "jax_memory_stats.json");
    od_profile *trace = must_load(DIR "torch_profiler_trace.json.gz");
    od_diag_input in[3];
    memset(in, 0, sizeof in);
    in[0].name = "jax_bfc.log";
    in[0].kind = OD_INPUT_LOG;
    in[0].triage = t;
    in[1].name = "jax_memory_stats.json";
    in[1].kind = OD_INPUT_PROFILE;
    in[1].profile = stats;
    od_diagnosis *d = NULL;
    assert_int_equal(od_diagnose(in, 1, &d, &err), OD_OK);
    /* the message alone gives only the request: capacity (triage's rule for request-only
     * reports), to be confirmed or corrected by the pool's figures */
    assert_int_equal(d->verdict, OD_VERDICT_CAPACITY);
    od_diagnosis_free(d);
    assert_int_equal(od_diagnose(in, 2, &d, &err), OD_OK);
    assert_int_equal(d->verdict, OD_VERDICT_CAPACITY);
    od_diagnosis_free(d);
    /* the same request against a roomy limit whose largest free block is too small */
    od_profile roomy = *stats;
    roomy.stats.bytes_limit = 1000000000000ULL;
    roomy.stats.largest_free_block_bytes = 1ULL << 30;
    in[1].profile = &roomy;
    assert_int_equal(od_diagnose(in, 2, &d, &err), OD_OK);
    assert_int_equal(d->verdict, OD_VERDICT_FRAGMENTATION);
    od_diagnosis_free(d);
    /* a profiled run alone: healthy, with the peak as evidence */
    in[2].name = "trace";
    in[2].kind = OD_INPUT_PROFILE;
    in[2].profile = trace;
    assert_int_equal(od_diagnose(&in[2], 1, &d, &err), OD_OK);
    assert_int_equal(d->verdict, OD_VERDICT_HEALTHY);
    int found = 0;
    for (size_t i = 0; i < d->n_evidence; i++)
        found |= d->evidence[i].key && !strcmp(d->evidence[i].key, "peak_allocated_bytes") &&
                 (uint64_t)d->evidence[i].value == real_peak();
    assert_true(found);
    od_diagnosis_free(d);
    od_profile_free(stats);
    od_profile_free(trace);
    od_triage_free(t);
    free(log);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trace_peak_is_the_real_peak),
        cmocka_unit_test(test_timeline_composition),
        cmocka_unit_test(test_key_averages_table),
        cmocka_unit_test(test_jax_profile_and_stats),
        cmocka_unit_test(test_bfc_log),
        cmocka_unit_test(test_truncated_timeline),
        cmocka_unit_test(test_truncated_pprof),
        cmocka_unit_test(test_garbage),
        cmocka_unit_test(test_jsonstream),
        cmocka_unit_test(test_detect),
        cmocka_unit_test(test_svg),
        cmocka_unit_test(test_diagnose_with_profiles),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
