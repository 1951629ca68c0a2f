/* test_triage.c - OOM report parsing and verdicts on the real messages in tests/data.
 * Expected figures are the ones printed in the fixture files, converted as printed
 * (GiB = 2^30, MiB = 2^20; "9.71 GiB" = 971 * 2^30 / 100, to the nearest byte). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "slurp.h"

#include "analyze/advice.h"
#include "read/triage/triage.h"

#define KiB (1ULL << 10)
#define MiB (1ULL << 20)
#define GiB (1ULL << 30)
/* A figure printed with two decimals: hundredths of the unit, to the nearest byte. */
#define H(hundredths, unit) ((uint64_t)(((unsigned __int128)(hundredths) * (unit) + 50) / 100))

static od_triage *parse_file(const char *path)
{
    size_t len;
    char *b = slurp(path, &len);
    od_triage *t = NULL;
    od_error err;
    assert_int_equal(od_triage_parse(b, len, &t, &err), OD_OK);
    free(b);
    return t;
}

static od_triage *parse_str(const char *s)
{
    od_triage *t = NULL;
    od_error err;
    assert_int_equal(od_triage_parse(s, strlen(s), &t, &err), OD_OK);
    return t;
}

static const od_oom_report *only_report(od_triage *t)
{
    assert_int_equal(t->n_reports, 1);
    return &t->reports[0];
}

static void torch1x_capacity(void **state)
{
    od_triage *t = parse_file("tests/data/messages/torch1x_capacity.txt");
    const od_oom_report *r = only_report(t);
    assert_int_equal(r->framework, OD_FW_PYTORCH_CUDA);
    assert_int_equal(r->line, 4); /* after a three-line traceback */
    assert_int_equal(r->requested_bytes, 20 * MiB);
    assert_int_equal(r->capacity_bytes, H(1076, GiB));
    assert_int_equal(r->allocated_bytes, H(971, GiB));
    assert_int_equal(r->free_bytes, H(456, MiB));
    /* 1.x prints the pool total: 9.72 GiB reserved - 9.71 GiB allocated */
    assert_int_equal(r->reserved_unallocated_bytes, H(972, GiB) - H(971, GiB));
    assert_true(r->rounded);
    assert_int_equal(r->verdict, OD_OOM_CAPACITY);
    assert_int_equal(r->headroom_bytes, H(456, MiB)); /* limited by the device's free memory */
    od_triage_free(t);
}

static void torch110_fragmentation(void **state)
{
    od_triage *t = parse_file("tests/data/messages/torch110_fragmentation.txt");
    const od_oom_report *r = only_report(t);
    assert_int_equal(r->device, 1);
    assert_int_equal(r->requested_bytes, 3 * GiB);
    assert_int_equal(r->reserved_unallocated_bytes, H(7540, GiB) - H(6102, GiB)); /* 14.38 GiB */
    assert_int_equal(r->verdict, OD_OOM_FRAGMENTATION);
    od_triage_free(t);
}

static void torch21_capacity_typo(void **state)
{
    od_triage *t = parse_file("tests/data/messages/torch21_capacity.txt");
    const od_oom_report *r = only_report(t);
    assert_int_equal(r->capacity_bytes, H(7915, GiB)); /* "total capacty" */
    assert_int_equal(r->free_bytes, H(11881, MiB));
    assert_int_equal(r->process_bytes, H(7902, GiB));
    assert_int_equal(r->allocated_bytes, H(7730, GiB));
    assert_int_equal(r->reserved_unallocated_bytes, H(2140, MiB));
    assert_int_equal(r->verdict, OD_OOM_CAPACITY);
    assert_int_equal(r->available_bytes, H(2140, MiB) + H(11881, MiB));
    assert_int_equal(r->missing_bytes, 256 * MiB - H(2140, MiB) - H(11881, MiB));
    od_triage_free(t);
}

static void torch22_other_process(void **state)
{
    od_triage *t = parse_file("tests/data/messages/torch22_other_process.txt");
    const od_oom_report *r = only_report(t);
    assert_int_equal(r->n_other, 1);
    assert_int_equal(r->other[0].pid, 31337);
    assert_int_equal(r->other[0].bytes, H(1240, GiB));
    assert_int_equal(r->process_bytes, H(1005, GiB));
    assert_int_equal(r->verdict, OD_OOM_OTHER_PROCESSES);
    od_triage_free(t);
}

static void hip_fragmentation(void **state)
{
    od_triage *t = parse_file("tests/data/messages/hip_fragmentation.txt");
    const od_oom_report *r = only_report(t);
    assert_int_equal(r->framework, OD_FW_PYTORCH_ROCM);
    assert_int_equal(r->capacity_bytes, H(19198, GiB));
    assert_int_equal(r->reserved_unallocated_bytes, H(1012, GiB));
    assert_int_equal(r->verdict, OD_OOM_FRAGMENTATION);
    od_triage_free(t);
}

static void mps_watermark(void **state)
{
    od_triage *t = parse_file("tests/data/messages/mps_watermark.txt");
    const od_oom_report *r = only_report(t);
    assert_int_equal(r->framework, OD_FW_PYTORCH_MPS);
    /* MPS "GB" is 1024-based */
    assert_int_equal(r->allocated_bytes, H(2581, GiB));
    assert_int_equal(r->allowed_bytes, H(2720, GiB));
    assert_int_equal(r->requested_bytes, 2 * GiB);
    assert_int_equal(r->process_bytes, H(2581, GiB) + 384 * KiB);
    assert_int_equal(r->verdict, OD_OOM_CAP_LIMIT);
    od_triage_free(t);
}

static void tensorflow_shape(void **state)
{
    od_triage *t = parse_file("tests/data/messages/tensorflow.txt");
    const od_oom_report *r = only_report(t); /* BFC line + exception = one event */
    assert_int_equal(r->framework, OD_FW_TENSORFLOW);
    assert_int_equal(r->requested_bytes, 128ULL * 768 * 64 * 64 * 4);
    assert_string_equal(r->dtype, "float");
    assert_false(r->rounded);
    assert_int_equal(r->verdict, OD_OOM_CAPACITY); /* only the request is printed */
    od_triage_free(t);
}

static void jax_resource_exhausted(void **state)
{
    od_triage *t = parse_file("tests/data/messages/jax.txt");
    const od_oom_report *r = only_report(t);
    assert_int_equal(r->framework, OD_FW_JAX);
    assert_int_equal(r->requested_bytes, 8589934592ULL);
    assert_int_equal(r->verdict, OD_OOM_CAPACITY);
    od_advice h[8];
    size_t n = od_advice_for_report(r, h, 8);
    int mentions = 0;
    for (size_t i = 0; i < n; i++) {
        const char *action = od_advice_get(h[i])->action;
        mentions |= strstr(action, "XLA_PYTHON_CLIENT_MEM_FRACTION") && strstr(action, "PREALLOCATE");
    }
    assert_true(mentions);
    od_triage_free(t);
}

static void jax_bfc_log(void **state)
{
    od_triage *t = parse_file("tests/data/profiler/jax_bfc.log");
    const od_oom_report *r = only_report(t);
    assert_int_equal(r->framework, OD_FW_JAX);
    assert_int_equal(r->requested_bytes, 400000000000ULL); /* "(rounded to 400000000000)" */
    od_triage_free(t);
}

static void tf_stats_dump(void **state)
{
    /* The BFC allocator's Stats: block gives the pool's limit and use. */
    od_triage *t = parse_str(
        "W tensorflow/core/common_runtime/bfc_allocator.cc:457] Allocator (GPU_0_bfc) ran out of memory "
        "trying to allocate 2.00GiB (rounded to 2147483648)requested by op MatMul\n"
        "I bfc_allocator.cc:1101] Stats: \n"
        "Limit:                     15652398336\n"
        "InUse:                     14000000000\n"
        "MaxInUse:                  15000000000\n"
        "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor "
        "with shape[16384,32768] and type float on /job:localhost/replica:0/task:0/device:GPU:0\n");
    const od_oom_report *r = only_report(t);
    assert_int_equal(r->capacity_bytes, 15652398336ULL);
    assert_int_equal(r->allocated_bytes, 14000000000ULL);
    assert_int_equal(r->requested_bytes, 16384ULL * 32768 * 4);
    /* 2 GiB > 15652398336 - 14000000000: does not fit */
    assert_int_equal(r->verdict, OD_OOM_CAPACITY);
    od_triage_free(t);
}

/* Without a cap PyTorch fails only when the driver refuses the segment it asked for, so the
 * device's free memory is read against that segment first (real reports, README rows). */
static void free_against_the_segment(void **state)
{
    (void)state;
    /* 12.50 MiB with 9.28 GiB free (1.0-1.3 wording): the figures contradict the failure */
    od_triage *t = parse_file("tests/data/messages/torch_cached_free_exceeds.txt");
    const od_oom_report *r = only_report(t);
    assert_int_equal(r->requested_bytes, H(1250, MiB));
    assert_false(r->request_is_segment); /* before 1.4 the tensor's size, not the segment's */
    assert_int_equal(r->free_bytes, H(928, GiB));
    assert_true(r->free_exceeds_request);
    assert_int_equal(r->verdict, OD_OOM_UNKNOWN);
    od_triage_free(t);
    /* ROCm: 2 MiB with 203.49 GiB free, though 14.93 GiB is cached */
    t = parse_file("tests/data/messages/hip_free_exceeds.txt");
    r = only_report(t);
    assert_true(r->free_exceeds_request);
    assert_int_equal(r->verdict, OD_OOM_UNKNOWN);
    od_triage_free(t);
    /* 32 MiB with 41.56 MiB free: 9.56 MiB over, under the 64 MiB margin: a full device, not
     * fragmentation (only 1.90 MiB is cached) */
    t = parse_file("tests/data/messages/torch21_free_barely.txt");
    r = only_report(t);
    assert_int_equal(r->free_bytes, H(4156, MiB));
    assert_false(r->free_exceeds_request);
    assert_true(r->free_barely_covers);
    assert_int_equal(r->verdict, OD_OOM_CAPACITY);
    od_triage_free(t);
    /* 8.13 GiB with 8.20 GiB free: 72 MiB over, under 1/16 of the request (520 MiB) */
    t = parse_file("tests/data/messages/torch_cached_free_barely.txt");
    r = only_report(t);
    assert_true(r->free_barely_covers);
    assert_int_equal(r->verdict, OD_OOM_CAPACITY);
    od_triage_free(t);
    /* 1.12 MiB with 3.56 MiB free: the request takes a 20 MiB segment, more than was free;
     * 787.74 MiB cached: fragmentation */
    t = parse_file("tests/data/messages/torch_cached_neurosim.txt");
    r = only_report(t);
    assert_false(r->free_barely_covers);
    assert_false(r->free_exceeds_request);
    assert_int_equal(r->verdict, OD_OOM_FRAGMENTATION);
    od_triage_free(t);
}

/* More of the device held outside the job than by it is the cause, whatever the cache does;
 * many processes holding the same small amount are other ranks' contexts. */
static void held_elsewhere(void **state)
{
    (void)state;
    /* 15 processes x 1.19 GiB beside this process's 13.82 GiB; 677.26 MiB cached would
     * have served the 52 MiB request, but the others hold more than the job */
    od_triage *t = parse_file("tests/data/messages/torch21_rank_contexts.txt");
    const od_oom_report *r = only_report(t);
    assert_int_equal(r->n_other, 15);
    assert_int_equal(r->others_bytes, 15 * H(119, GiB));
    assert_int_equal(r->process_bytes, H(1382, GiB));
    assert_true(r->stray_contexts);
    assert_true(r->elsewhere_dominates);
    assert_int_equal(r->verdict, OD_OOM_OTHER_PROCESSES);
    od_advice a[8];
    size_t n = od_advice_for_report(r, a, 8);
    assert_true(n >= 1);
    assert_int_equal(a[0], OD_ADV_RANK_CONTEXTS);
    od_triage_free(t);
    /* rank 2 holds 75.45 GiB of 79.19 GiB; 7 x 540 MiB contexts beside it are less than the
     * job: a full device, with the contexts' fix first */
    t = parse_file("tests/data/messages/torch_rank_contexts_full.txt");
    r = only_report(t);
    assert_int_equal(r->n_other, 7);
    assert_true(r->stray_contexts);
    assert_false(r->elsewhere_dominates);
    assert_int_equal(r->verdict, OD_OOM_CAPACITY);
    n = od_advice_for_report(r, a, 8);
    assert_int_equal(a[0], OD_ADV_RANK_CONTEXTS);
    od_triage_free(t);
    /* 1.x lists no processes: 14.56 - 1.31 free - 1.01 reserved = 12.24 GiB outside the pool */
    t = parse_file("tests/data/messages/torch_reserved_outside_pool.txt");
    r = only_report(t);
    assert_int_equal(r->held_elsewhere_bytes, H(1456, GiB) - H(131, GiB) - H(101, GiB));
    assert_int_equal(r->verdict, OD_OOM_OTHER_PROCESSES);
    od_triage_free(t);
    /* cudaMallocAsync prints no cache figure: what it caches is not taken for elsewhere */
    t = parse_file("tests/data/messages/torch_malloc_async_chattts.txt");
    r = only_report(t);
    assert_false(r->elsewhere_dominates);
    assert_int_equal(r->verdict, OD_OOM_CAPACITY);
    od_triage_free(t);
    /* ROCm without a process list (an APU's capacity is system memory): not read this way */
    t = parse_file("tests/data/messages/hip_capacity_strix.txt");
    r = only_report(t);
    assert_false(r->elsewhere_dominates);
    assert_int_equal(r->verdict, OD_OOM_CAPACITY);
    od_triage_free(t);
}

/* TensorFlow on ROCm prints the stream executor's line with HIP's status; its pinned host
 * allocator (cuda_host_bfc) is host memory; a first pool of 127.99 TiB is a garbage figure. */
static void tf_rocm_and_pinned_host(void **state)
{
    (void)state;
    od_triage *t = parse_file("tests/data/messages/tf_rocm_driver.txt");
    const od_oom_report *r = only_report(t);
    assert_int_equal(r->framework, OD_FW_TENSORFLOW);
    assert_int_equal(r->kind, OD_KIND_DRIVER);
    assert_int_equal(r->requested_bytes, 933298432);
    assert_false(r->size_corrupt);
    od_triage_free(t);
    /* five lines backing off by 10% from 140729850295296 bytes: one event, the first size */
    t = parse_file("tests/data/messages/tf_rocm_garbage_pool.txt");
    r = only_report(t);
    assert_int_equal(r->requested_bytes, 140729850295296ULL);
    assert_true(r->size_corrupt);
    assert_int_equal(r->verdict, OD_OOM_UNKNOWN);
    od_advice a[8];
    size_t n = od_advice_for_report(r, a, 8);
    assert_int_equal(n, 1);
    assert_int_equal(a[0], OD_ADV_TF_GROWTH);
    od_triage_free(t);
    /* 7.35G, 6.61G, 5.95G: BFCAllocator backing off by 10%, logged while it retries */
    t = parse_file("tests/data/messages/tf_rocm_hip1002.txt");
    r = only_report(t);
    assert_int_equal(r->requested_bytes, 7889485824ULL);
    assert_int_equal(r->backoff_steps, 2);
    assert_int_equal(r->backoff_last_bytes, 6390482944ULL);
    assert_int_equal(r->verdict, OD_OOM_UNKNOWN);
    od_triage_free(t);
    /* one line: nothing says it backed off */
    t = parse_file("tests/data/messages/tf_cuda_driver_pixor.txt");
    r = only_report(t);
    assert_int_equal(r->backoff_steps, 0);
    assert_int_equal(r->verdict, OD_OOM_CAPACITY);
    od_triage_free(t);
    t = parse_file("tests/data/messages/tf_host_bfc.txt");
    r = only_report(t);
    assert_int_equal(r->framework, OD_FW_HOST);
    assert_int_equal(r->kind, OD_KIND_HOST_RAM);
    assert_int_equal(r->requested_bytes, H(372, GiB));
    assert_int_equal(r->verdict, OD_OOM_HOST_MEMORY);
    n = od_advice_for_report(r, a, 8);
    assert_int_equal(a[0], OD_ADV_TF_HOST_LIMIT);
    od_triage_free(t);
}

/* XLA's BufferAssignment stats say what the compiled program needs in all: 12.00 MiB cannot
 * exhaust a GPU by itself (jax#13428, 'no matter how small the batch size'), 14.44 GiB
 * is the program's own need. */
static void jax_program_size(void **state)
{
    (void)state;
    od_triage *t = parse_file("tests/data/messages/jax_gpu_bufferassignment.txt");
    const od_oom_report *r = only_report(t);
    assert_int_equal(r->requested_bytes, 6291456);
    assert_int_equal(r->program_bytes, 12 * MiB);
    assert_int_equal(r->verdict, OD_OOM_OTHER_PROCESSES);
    od_advice a[8];
    size_t n = od_advice_for_report(r, a, 8);
    assert_true(n >= 1);
    assert_int_equal(a[0], OD_ADV_JAX_PREALLOC);
    od_triage_free(t);
    t = parse_file("tests/data/messages/jax_gpu_afprofile.txt");
    r = only_report(t);
    assert_int_equal(r->program_bytes, H(1444, GiB));
    assert_int_equal(r->verdict, OD_OOM_CAPACITY);
    od_triage_free(t);
}

/* The cache + free memory would hold the request, but what the cache strands is too little
 * to matter: the device is full (capacity), fragmentation only the proximate cause. */
static void cache_too_small_to_matter(void **state)
{
    (void)state;
    /* 32 MiB with 20.48 MiB cached (4.80 - 4.78 GiB) and 27.19 MiB free on 5.94 GiB: the
     * cache is smaller than the request and under 5% of the card */
    od_triage *t = parse_file("tests/data/messages/torch_reserved_cache_small.txt");
    const od_oom_report *r = only_report(t);
    assert_int_equal(r->reserved_unallocated_bytes, H(480, GiB) - H(478, GiB));
    assert_true(r->stranded_small);
    assert_int_equal(r->verdict, OD_OOM_CAPACITY);
    od_triage_free(t);
    /* 7.20 of 8.00 GiB allocated (90%), 102.40 MiB cached: 5x the request, but 1.25% of
     * the card */
    t = parse_file("tests/data/messages/torch_reserved_near_full_ckpt.txt");
    r = only_report(t);
    assert_int_equal(r->requested_bytes, 20 * MiB);
    assert_true(r->near_full);
    assert_int_equal(r->verdict, OD_OOM_CAPACITY);
    od_triage_free(t);
    /* 140.56 MiB cached under a 2 GiB cap (6.9%), 73% allocated: fragmentation */
    t = parse_file("tests/data/extracted/frag_default_oom.txt");
    r = only_report(t);
    assert_false(r->stranded_small);
    assert_false(r->near_full);
    assert_int_equal(r->verdict, OD_OOM_FRAGMENTATION);
    od_triage_free(t);
}

/* Two real pastes whose figure is on the next line: TF 1.x printed the shape without a type
 * (the op's node below names T=DT_FLOAT), and a word wrap after "Out" moved XLA's request. */
static void figure_on_the_next_line(void **state)
{
    (void)state;
    od_triage *t = parse_file("tests/data/messages/tf1_shape_node_type.txt");
    const od_oom_report *r = only_report(t);
    assert_int_equal(r->requested_bytes, 5760ULL * 4 * 4 * 2048 * 4);
    assert_string_equal(r->dtype, "float");
    assert_true(r->dtype_from_op);
    od_triage_free(t);
    t = parse_file("tests/data/messages/jax_wrapped_request.txt");
    r = only_report(t);
    assert_int_equal(r->framework, OD_FW_JAX);
    assert_int_equal(r->requested_bytes, 5520758552ULL);
    od_triage_free(t);
}

static void real_frag_default(void **state)
{
    od_triage *t = parse_file("tests/data/extracted/frag_default_oom.txt");
    const od_oom_report *r = only_report(t);
    assert_int_equal(r->requested_bytes, 488 * MiB);
    assert_int_equal(r->allowed_bytes, 2 * GiB);
    assert_int_equal(r->n_other, 2);
    assert_int_equal(r->other[0].pid, 1135);
    assert_int_equal(r->other[1].pid, 1137);
    assert_int_equal(r->other[1].bytes, H(328, GiB));
    /* headroom = 2 GiB - (1.47 GiB + 140.56 MiB); request <= 140.56 MiB + headroom */
    assert_int_equal(r->headroom_bytes, 2 * GiB - H(147, GiB) - H(14056, MiB));
    assert_int_equal(r->verdict, OD_OOM_FRAGMENTATION);
    od_triage_free(t);
}

static void real_snap_train_oom(void **state)
{
    od_triage *t = parse_file("tests/data/extracted/snap_train_oom_oom.txt");
    const od_oom_report *r = only_report(t);
    assert_int_equal(r->allowed_bytes, H(839, GiB));
    assert_int_equal(r->free_bytes, H(12647, GiB));
    assert_int_equal(r->verdict, OD_OOM_CAP_LIMIT);
    od_triage_free(t);
}

static void log_with_summary(void **state)
{
    od_triage *t = parse_file("tests/data/extracted/train_oom_log.txt");
    const od_oom_report *r = only_report(t);
    assert_int_equal(r->line, 5);
    assert_int_equal(r->verdict, OD_OOM_CAP_LIMIT);
    assert_int_equal(t->n_summaries, 1);
    const od_mem_summary *m = &t->summaries[0];
    assert_int_equal(m->allocated_bytes, 836 * MiB);
    assert_int_equal(m->allocated_peak_bytes, 8572 * MiB);
    assert_int_equal(m->reserved_bytes, 8574 * MiB);
    assert_int_equal(m->non_releasable_bytes, 1434 * KiB);
    assert_int_equal(m->ooms, 1);
    assert_int_equal(m->retries, 2);
    /* 7.6 GiB cached but only 1.4 MiB non-releasable: not fragmentation (the OOM was the cap) */
    assert_int_equal(m->verdict, OD_OOM_UNKNOWN);
    od_triage_free(t);
    t = parse_file("tests/data/extracted/frag_default_summary.txt");
    assert_int_equal(t->n_summaries, 1);
    assert_true(t->summaries[0].have_non_releasable);
    assert_int_equal(t->summaries[0].verdict, OD_OOM_FRAGMENTATION);
    od_triage_free(t);
    /* the same table pasted without its Non-releasable rows: the figure is missing, not 0 B,
     * and without it the table cannot say fragmentation */
    size_t len;
    char *txt = slurp("tests/data/extracted/frag_default_summary.txt", &len);
    char *cut = strstr(txt, "| Non-releasable memory");
    assert_non_null(cut);
    char *resume = strstr(cut, "| Allocations");
    assert_non_null(resume);
    memmove(cut, resume, strlen(resume) + 1);
    t = parse_str(txt);
    assert_int_equal(t->n_summaries, 1);
    assert_false(t->summaries[0].have_non_releasable);
    assert_int_equal(t->summaries[0].verdict, OD_OOM_UNKNOWN);
    od_triage_free(t);
    free(txt);
}

static void memory_stats_json(void **state)
{
    od_triage *t = parse_file("tests/data/extracted/snap_train_default_memory_stats.json");
    assert_int_equal(t->n_reports, 0);
    assert_non_null(t->stats);
    assert_false(t->stats->jax);
    assert_int_equal(t->stats->allocated_bytes, 1083136512ULL);
    assert_int_equal(t->stats->allocated_peak_bytes, 5371063296ULL);
    assert_int_equal(t->stats->reserved_bytes, 6006243328ULL);
    assert_int_equal(t->stats->inactive_split_bytes, 1351656960ULL);
    od_triage_free(t);
    t = parse_file("tests/data/profiler/jax_memory_stats.json");
    assert_non_null(t->stats);
    assert_true(t->stats->jax);
    assert_int_equal(t->stats->limit_bytes, 112583507968ULL);
    assert_int_equal(t->stats->allocated_bytes, 872415488ULL);
    od_triage_free(t);
}

/* The H200 run's memory_stats (snap_train_oom), as its JSON dump holds them. */
static void assert_snap_train_oom_stats(const od_mem_stats *m)
{
    assert_non_null(m);
    assert_false(m->jax);
    assert_int_equal(m->allocated_bytes, 877237760ULL);
    assert_int_equal(m->allocated_peak_bytes, 8989302272ULL);
    assert_int_equal(m->reserved_bytes, 8990490624ULL);
    assert_int_equal(m->reserved_peak_bytes, 8990490624ULL);
    assert_int_equal(m->inactive_split_bytes, 1468928ULL);
    assert_int_equal(m->ooms, 1);
    assert_int_equal(m->retries, 2);
    assert_int_equal(m->have, OD_MS_ALLOCATED | OD_MS_ALLOCATED_PEAK | OD_MS_RESERVED | OD_MS_RESERVED_PEAK |
                                  OD_MS_INACTIVE | OD_MS_OOMS | OD_MS_RETRIES);
    assert_int_equal(m->verdict, OD_OOM_UNKNOWN); /* 1.40 MiB stranded of 7.56 GiB cached */
    assert_false(m->cut_short);
}

/* print(torch.cuda.memory_stats()) in every form Python gives it reads as the JSON dump. */
static void memory_stats_python(void **state)
{
    static const char *const forms[] = {
        "tests/data/extracted/snap_train_oom_memory_stats_od311.txt",
        "tests/data/extracted/snap_train_oom_memory_stats_od312.txt",
        "tests/data/extracted/snap_train_oom_memory_stats_dict.txt",
        "tests/data/extracted/snap_train_oom_memory_stats_pprint.txt",
        "tests/data/extracted/snap_train_oom_memory_stats_pprint_od311.txt",
    };
    od_triage *json = parse_file("tests/data/extracted/snap_train_oom_memory_stats.json");
    assert_snap_train_oom_stats(json->stats);
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        od_triage *t = parse_file(forms[i]);
        assert_int_equal(t->n_reports, 0);
        assert_snap_train_oom_stats(t->stats);
        assert_memory_equal(t->stats, json->stats, sizeof *t->stats);
        od_triage_free(t);
    }
    od_triage_free(json);
    /* in a log, after a prompt, and pprint'ed under a rank prefix on every line */
    od_triage *t = parse_file("tests/data/extracted/train_oom_stats_log.txt");
    assert_int_equal(t->n_reports, 1);
    assert_int_equal(t->reports[0].line, 5);
    assert_snap_train_oom_stats(t->stats);
    od_triage_free(t);
    /* cut short inside reserved_bytes.all.current's figure: what was read is exact, the cut
     * figure and every later one are missing */
    t = parse_file("tests/data/extracted/snap_train_oom_memory_stats_cut.txt");
    assert_non_null(t->stats);
    assert_true(t->stats->cut_short);
    assert_int_equal(t->stats->allocated_bytes, 877237760ULL);
    assert_int_equal(t->stats->allocated_peak_bytes, 8989302272ULL);
    assert_int_equal(t->stats->inactive_split_bytes, 1468928ULL);
    assert_int_equal(t->stats->ooms, 1);
    assert_int_equal(t->stats->have & (OD_MS_RESERVED | OD_MS_RESERVED_PEAK), 0);
    assert_int_equal(t->stats->verdict, OD_OOM_UNKNOWN);
    od_triage_free(t);
}

static void memory_stats_python_edges(void **state)
{
    /* a figure is read only once what follows closes it */
    od_triage *t = parse_str("{'allocated_bytes.all.current': 1024, 'reserved_bytes.all.current': 20");
    assert_non_null(t->stats);
    assert_true(t->stats->cut_short);
    assert_int_equal(t->stats->allocated_bytes, 1024);
    assert_false(t->stats->have & OD_MS_RESERVED);
    od_triage_free(t);
    t = parse_str("OrderedDict([('allocated_bytes.all.current', 1024), ('reserved_bytes.all.current', 2048\n"
                  "2024-05-01 12:00:00 INFO next step\n");
    assert_int_equal(t->stats->allocated_bytes, 1024);
    assert_false(t->stats->have & OD_MS_RESERVED);
    od_triage_free(t);
    /* a line break inside a figure is no Python: the figure is not joined */
    t = parse_str("{'allocated_bytes.all.current': 10,\n 'reserved_bytes.all.current': 20\n48}\n");
    assert_int_equal(t->stats->allocated_bytes, 10);
    assert_false(t->stats->have & OD_MS_RESERVED);
    od_triage_free(t);
    /* None, True, floats, negatives and ints beyond int64 are no byte counts; the last dict
     * printed is the one read; JSON's spellings too */
    t = parse_str("{'allocated_bytes.all.current': 1, 'reserved_bytes.all.current': 2}\n"
                  "step 2\n"
                  ">>> torch.cuda.memory_stats()\n"
                  "{'allocated_bytes.all.current': 3.0, 'reserved_bytes.all.current': 99999999999999999999,"
                  " 'num_ooms': None, 'num_alloc_retries': True, 'inactive_split_bytes.all.current': -5,"
                  " 'allocated_bytes.all.peak': 4e3, 'max_split_size': -1, \"x\": null, 'y': 'text'}\n");
    assert_non_null(t->stats);
    assert_false(t->stats->cut_short);
    assert_int_equal(t->stats->allocated_bytes, 3);
    assert_int_equal(t->stats->allocated_peak_bytes, 4000);
    assert_int_equal(t->stats->have, OD_MS_ALLOCATED | OD_MS_ALLOCATED_PEAK);
    od_triage_free(t);
    /* one level down, as a dict of devices prints */
    t = parse_str("{'cuda:0': OrderedDict([('allocated_bytes.all.current', 5), ('reserved_bytes.all.current', 7),"
                  " ('inactive_split_bytes.all.current', 2), ('num_ooms', 3)])}\n");
    assert_int_equal(t->stats->allocated_bytes, 5);
    assert_int_equal(t->stats->reserved_bytes, 7);
    assert_int_equal(t->stats->verdict, OD_OOM_FRAGMENTATION); /* 2 of 2 cached bytes stranded, OOMs */
    od_triage_free(t);
    /* a prefix on every line is skipped; a dict without the figures is none; nor is a bare
     * list of pairs (list(stats.items()), often scaled to MiB) */
    t = parse_str("[rank1]: {'allocated_bytes.all.current': 1048576,\n"
                  "[rank1]:  'reserved_bytes.all.current': 2097152}\n");
    assert_int_equal(t->stats->reserved_bytes, 2097152);
    od_triage_free(t);
    t = parse_str("{'loss': 2.31, 'lr': 0.0001}\n{'epoch': 1}\n");
    assert_null(t->stats);
    od_triage_free(t);
    t = parse_str("[('allocated_bytes.all.current', 5861), ('reserved_bytes.all.current', 5866)]\n");
    assert_null(t->stats);
    od_triage_free(t);
}

static void nvidia_smi(void **state)
{
    od_triage *t = parse_file("tests/data/measured/nvidia-smi.txt");
    assert_int_equal(t->n_gpus, 1);
    assert_int_equal(t->gpus[0].index, 0);
    assert_string_equal(t->gpus[0].name, "NVIDIA H200");
    assert_int_equal(t->gpus[0].total_bytes, 143771 * MiB);
    assert_int_equal(t->gpus[0].used_bytes, 0);
    assert_int_equal(t->n_procs, 0);
    od_triage_free(t);
    t = parse_file("tests/data/measured/nvidia-smi-q-memory.txt");
    assert_int_equal(t->n_gpus, 1);
    assert_string_equal(t->gpus[0].bus_id, "00000000:00:06.0");
    assert_int_equal(t->gpus[0].reserved_bytes, 616 * MiB);
    assert_int_equal(t->gpus[0].free_bytes, 143156 * MiB);
    assert_int_equal(t->gpus[0].total_bytes, 143771 * MiB); /* FB, not BAR1 */
    od_triage_free(t);
    t = parse_file("tests/data/measured/nvidia-smi-query.csv");
    assert_int_equal(t->n_gpus, 1);
    assert_int_equal(t->gpus[0].free_bytes, 143156 * MiB);
    assert_string_equal(t->gpus[0].name, "NVIDIA H200");
    od_triage_free(t);
}

static void smi_processes(void **state)
{
    od_triage *t = parse_str(
        "|=========================================================================================|\n"
        "|    0   N/A  N/A           31337      C   python                                12698MiB |\n"
        "|    1   N/A  N/A            4242      C   /usr/bin/python3                        512MiB |\n");
    assert_int_equal(t->n_procs, 0); /* rows count only after a "Processes:" header */
    od_triage_free(t);
    t = parse_str("| Processes:                                    |\n"
                  "|    0   N/A  N/A           31337      C   python                                12698MiB |\n"
                  "|    1     4242      C   /usr/bin/python3                        512MiB |\n");
    assert_int_equal(t->n_procs, 2);
    assert_int_equal(t->procs[0].pid, 31337);
    assert_int_equal(t->procs[0].bytes, 12698 * MiB);
    assert_int_equal(t->procs[1].gpu, 1);
    assert_int_equal(t->procs[1].pid, 4242);
    assert_string_equal(t->procs[1].name, "/usr/bin/python3");
    od_triage_free(t);
}

static void nothing_found(void **state)
{
    od_triage *t = parse_str("epoch 1: loss 2.31\nall good, 12.00 GiB free\n");
    assert_int_equal(t->n_reports, 0);
    assert_int_equal(t->n_summaries, 0);
    assert_null(t->stats);
    assert_int_equal(t->n_gpus, 0);
    od_triage_free(t);
    t = parse_str("");
    assert_int_equal(t->n_reports, 0);
    od_triage_free(t);
}

static void repeats_fold(void **state)
{
    size_t len;
    char *b = slurp("tests/data/messages/torch22_other_process.txt", &len);
    size_t n = len * 2 + 2;
    char *two = malloc(n + 1);
    snprintf(two, n + 1, "%s\n%s", b, b);
    od_triage *t = parse_str(two);
    assert_int_equal(t->n_reports, 1);
    assert_int_equal(t->reports[0].occurrences, 2);
    od_triage_free(t);
    free(two);
    free(b);
}

static void absurd_and_garbage(void **state)
{
    od_triage *t = parse_str("CUDA out of memory. Tried to allocate 99999999999999999999999 GiB. "
                             "GPU 0 has a total capacity of 9999999999.99 TiB of which \x01 is free.");
    const od_oom_report *r = only_report(t);
    assert_false(r->have & OD_HAVE_REQUESTED);
    assert_int_equal(r->verdict, OD_OOM_UNKNOWN);
    od_triage_free(t);
    const char bin[] = "CUDA out of memory\0Tried to allocate 2.00 GiB\r\n";
    t = NULL;
    od_error err;
    assert_int_equal(od_triage_parse(bin, sizeof bin - 1, &t, &err), OD_OK);
    assert_int_equal(t->n_reports, 1);
    od_triage_free(t);
}

static void wrapped_message(void **state)
{
    /* the real 2.2+ wording of torch22_other_process.txt, wrapped at 80 columns by a logger */
    od_triage *t = parse_str(
        "ERROR trainer failed:\n"
        "    torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0\n"
        "    has a total capacity of 23.53 GiB of which 1.06 GiB is free. Process 31337 has\n"
        "    12.40 GiB memory in use. Including non-PyTorch memory, this process has 10.05\n"
        "    GiB memory in use. Of the allocated memory 9.12 GiB is allocated by PyTorch, and\n"
        "    412.30 MiB is reserved by PyTorch but unallocated. If reserved but unallocated\n"
        "\n"
        "epoch 3: 5.00 GiB free\n");
    const od_oom_report *r = only_report(t);
    assert_int_equal(r->line, 2);
    assert_int_equal(r->capacity_bytes, H(2353, GiB));
    assert_int_equal(r->process_bytes, H(1005, GiB));
    assert_int_equal(r->reserved_unallocated_bytes, H(41230, MiB));
    assert_int_equal(r->other[0].bytes, H(1240, GiB));
    assert_int_equal(r->verdict, OD_OOM_OTHER_PROCESSES);
    od_triage_free(t);
}

static void classify_by_hand(void **state)
{
    od_oom_report r;
    memset(&r, 0, sizeof r);
    r.framework = OD_FW_PYTORCH_CUDA;
    r.have = OD_HAVE_REQUESTED | OD_HAVE_ALLOCATED | OD_HAVE_ALLOWED | OD_HAVE_RESERVED_UNALLOC;
    r.requested_bytes = 100 * MiB;
    r.allowed_bytes = 1 * GiB;
    r.allocated_bytes = 1000 * MiB;
    r.reserved_unallocated_bytes = 10 * MiB;
    od_triage_classify(&r); /* cap printed, no device figure: over the cap is enough */
    assert_int_equal(r.verdict, OD_OOM_CAP_LIMIT);
    r.have &= ~(unsigned)OD_HAVE_ALLOCATED;
    od_triage_classify(&r);
    assert_int_equal(r.verdict, OD_OOM_CAPACITY); /* a report with only the request */
    /* a cap, but the device is full too: not the cap's fault */
    r.have |= OD_HAVE_ALLOCATED | OD_HAVE_FREE;
    r.free_bytes = 50 * MiB;
    od_triage_classify(&r);
    assert_int_equal(r.verdict, OD_OOM_CAPACITY);
    assert_string_equal(od_oom_verdict_name(OD_OOM_OTHER_PROCESSES), "other_processes");
    assert_string_equal(od_framework_name(OD_FW_PYTORCH_ROCM), "pytorch-rocm");
    assert_int_equal(od_tf_dtype_size("bfloat16", 8), 2);
    assert_int_equal(od_tf_dtype_size("nosuch", 6), 0);
}


static od_triage *parse_text(const char *text)
{
    od_triage *t = NULL;
    od_error err;
    assert_int_equal(od_triage_parse(text, strlen(text), &t, &err), OD_OK);
    return t;
}

/* The 90% rule: fragmentation on a nearly full device is capacity unless the stranded cache
 * dwarfs the request. */
static void near_full_rule(void **state)
{
    od_oom_report r;
    memset(&r, 0, sizeof r);
    r.framework = OD_FW_PYTORCH_CUDA;
    r.have = OD_HAVE_REQUESTED | OD_HAVE_ALLOCATED | OD_HAVE_CAPACITY | OD_HAVE_RESERVED_UNALLOC | OD_HAVE_FREE;
    r.capacity_bytes = 80 * GiB;
    r.allocated_bytes = 75 * GiB; /* 94% */
    r.requested_bytes = 1 * GiB;
    r.reserved_unallocated_bytes = 1536 * MiB; /* < 2 x request */
    r.free_bytes = 100 * MiB;
    od_triage_classify(&r);
    assert_int_equal(r.verdict, OD_OOM_CAPACITY);
    assert_true(r.near_full);
    r.allocated_bytes = 65 * GiB;
    r.reserved_unallocated_bytes = 10 * GiB; /* 10 GiB stranded against 1 GiB: fragmentation */
    od_triage_classify(&r);
    assert_int_equal(r.verdict, OD_OOM_FRAGMENTATION);
    assert_false(r.near_full);
    /* "N allowed" equal to the capacity is no cap */
    r.have |= OD_HAVE_ALLOWED;
    r.allowed_bytes = r.capacity_bytes;
    r.reserved_unallocated_bytes = 0;
    r.allocated_bytes = 70 * GiB;
    r.requested_bytes = 20 * GiB;
    od_triage_classify(&r);
    assert_int_equal(r.verdict, OD_OOM_CAPACITY);
    assert_true(r.size_bug == 0);
    r.requested_bytes = 90 * GiB;
    od_triage_classify(&r);
    assert_true(r.size_bug);
}

/* In a container the process appears as "Process N": it is this process, not another. */
static void self_as_other_process(void **state)
{
    od_triage *t = parse_text(
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
        "79.15 GiB of which 1.25 GiB is free. Process 3177 has 77.89 GiB memory in use. Of the allocated memory "
        "76.20 GiB is allocated by PyTorch, and 1.10 GiB is reserved by PyTorch but unallocated. If reserved but "
        "unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid "
        "fragmentation.  See documentation for Memory Management  "
        "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)\n");
    const od_oom_report *r = only_report(t);
    assert_int_equal(r->n_other, 0);
    assert_true(r->self_from_other);
    assert_int_equal(r->verdict, OD_OOM_CAPACITY);
    od_triage_free(t);
}

/* cudaMallocAsync's wording; its "PyTorch limit" without a fraction is 2^64 bytes, ignored. */
static void malloc_async_wording(void **state)
{
    od_triage *t = parse_text("torch.OutOfMemoryError: Allocation on device 0 would exceed allowed memory. (out of memory)\n"
                              "Currently allocated     : 7.56 GiB\n"
                              "Requested               : 1.00 GiB\n"
                              "Device limit            : 7.79 GiB\n"
                              "Free (according to CUDA): 19.06 MiB\n"
                              "PyTorch limit (set by user-supplied memory fraction)\n"
                              "                        : 17179869184.00 GiB\n");
    const od_oom_report *r = only_report(t);
    assert_int_equal(r->framework, OD_FW_PYTORCH_CUDA);
    assert_true((r->have & OD_HAVE_ALLOWED) == 0);
    assert_int_equal(r->allocated_bytes, (uint64_t)(7.56 * GiB + 0.5));
    assert_int_equal(r->capacity_bytes, (uint64_t)(7.79 * GiB + 0.5));
    assert_int_equal(r->requested_bytes, 1 * GiB);
    assert_int_equal(r->verdict, OD_OOM_CAPACITY);
    od_triage_free(t);
}

/* Host memory, libraries, vLLM and XLA wordings get their frameworks and verdicts. */
static void other_wordings(void **state)
{
    static const struct { const char *file; od_framework fw; od_oom_verdict v; uint64_t req; } c[] = {
        {"tests/data/messages/host_dataloader_killed.txt", OD_FW_HOST, OD_OOM_HOST_MEMORY, 0},
        {"tests/data/messages/host_cpu_alloc_mask2former.txt", OD_FW_HOST, OD_OOM_HOST_MEMORY, 3077222400ULL},
        {"tests/data/messages/nccl_calloc_narval.txt", OD_FW_NCCL, OD_OOM_CAPACITY, 6291456ULL},
        {"tests/data/messages/cublas_create_qwen.txt", OD_FW_CUBLAS, OD_OOM_UNKNOWN, 0},
        {"tests/data/messages/cudnn_cntk.txt", OD_FW_CUDNN, OD_OOM_UNKNOWN, 0},
        {"tests/data/messages/vllm_cache_blocks_docker.txt", OD_FW_VLLM, OD_OOM_CAP_LIMIT, 0},
        {"tests/data/messages/vllm_startup_free.txt", OD_FW_VLLM, OD_OOM_CAP_LIMIT, 21303037788ULL},
        {"tests/data/messages/xla_tpu_lwm.txt", OD_FW_JAX, OD_OOM_CAPACITY, 23568633037ULL},
        {"tests/data/messages/torch_xla_reserve_resnet.txt", OD_FW_PYTORCH_XLA, OD_OOM_FRAGMENTATION, 6957847020ULL},
        {"tests/data/messages/jax_gpu_bufferassignment.txt", OD_FW_JAX, OD_OOM_OTHER_PROCESSES, 6291456ULL},
        {"tests/data/messages/ort_arena_corrupt.txt", OD_FW_ONNXRUNTIME, OD_OOM_CAPACITY, 4585490524328388608ULL},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        od_triage *t = parse_file(c[i].file);
        const od_oom_report *r = only_report(t);
        assert_int_equal(r->framework, c[i].fw);
        assert_int_equal(r->verdict, c[i].v);
        if (c[i].req)
            assert_int_equal(r->requested_bytes, c[i].req);
        od_triage_free(t);
    }
    od_triage *t = parse_file("tests/data/messages/ort_arena_corrupt.txt");
    assert_true(t->reports[0].size_corrupt);
    od_advice h[8];
    assert_true(od_advice_for_report(&t->reports[0], h, 8) > 0);
    assert_int_equal(h[0], OD_ADV_SIZE_CORRUPT);
    od_triage_free(t);
}


/* nvidia-smi's process table with two processes on one GPU: other processes. */
static void smi_other_processes(void **state)
{
    static const char text[] =
        "+-----------------------------------------------------------------------------------------+\n"
        "| Processes:                                                                              |\n"
        "|  GPU   GI   CI              PID   Type   Process name                        GPU Memory |\n"
        "|        ID   ID                                                               Usage      |\n"
        "|=========================================================================================|\n"
        "|    0   N/A  N/A           12345      C   python                                 20000MiB |\n"
        "|    0   N/A  N/A           23456      C   python                                 60000MiB |\n"
        "+-----------------------------------------------------------------------------------------+\n";
    od_triage *t = parse_text(text);
    assert_int_equal(t->n_procs, 2);
    assert_int_equal(t->smi_verdict, OD_OOM_OTHER_PROCESSES);
    od_triage_free(t);
    t = parse_file("tests/data/measured/nvidia-smi.txt");
    assert_int_equal(t->smi_verdict, OD_OOM_UNKNOWN);
    od_triage_free(t);
}

/* Windows/WSL: allocated above capacity is spill, and 2^64 "free" is garbage. */
static void spill_and_garbage(void **state)
{
    od_triage *t = parse_text("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
                              "total capacity of 8.00 GiB of which 17179869184.00 GiB is free. Of the allocated memory "
                              "9.50 GiB is allocated by PyTorch, and 100.00 MiB is reserved by PyTorch but "
                              "unallocated.\n");
    const od_oom_report *r = only_report(t);
    assert_true(r->spill);
    assert_true(r->garbage_figure);
    assert_false(r->have & OD_HAVE_FREE);
    assert_int_equal(r->verdict, OD_OOM_CAPACITY);
    assert_non_null(od_advice_meaning(r));
    od_triage_free(t);
}

/* vLLM V1 states the KV cache it needs and what is left: cap_limit with both figures. */
static void vllm_kv_needed(void **state)
{
    od_triage *t = parse_file("tests/data/messages/vllm_v1_kv_needed.txt");
    const od_oom_report *r = only_report(t);
    assert_int_equal(r->framework, OD_FW_VLLM);
    assert_int_equal(r->verdict, OD_OOM_CAP_LIMIT);
    assert_int_equal(r->requested_bytes, 16 * GiB);
    assert_int_equal(r->max_model_len, 131072);
    assert_int_equal(r->kv_cache_tokens, 5632);
    od_advice h[8];
    assert_true(od_advice_for_report(r, h, 8) >= 1);
    assert_int_equal(h[0], OD_ADV_VLLM_RAISE);
    od_triage_free(t);
}

/* A logger that wraps at a fixed column splits words and figures: a split inside one word
 * of the wording, or inside a two-decimal figure, is rejoined; lines keep their numbers. */
static void wrapped_mid_word(void **state)
{
    od_triage *t = parse_str(
        "E cuda_driver.cc:806] failed to allocate 2.00G (2147483648 bytes) from devic\n"
        "e: CUDA_ERROR_OUT_OF_MEMORY: out of memory\n");
    const od_oom_report *r = only_report(t);
    assert_int_equal(r->framework, OD_FW_TENSORFLOW);
    assert_int_equal(r->requested_bytes, 2147483648ULL);
    od_triage_free(t);
    static const char wrapped[] =
        "ERROR trainer failed:\n"
        "    torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capac\n"
        "    ity of 23.53 GiB of which 1.0\n"
        "6 GiB is free. Process 31337 has 12.40 GiB memory in use. Including non-PyTorch memory, this pro\n"
        "cess has 10.05 GiB memory in use. Of the allocated memory 9.12 GiB is allocated by PyTorch, and\n"
        "412.30 MiB is reserved by PyTorch but unal\n"
        "located.\n"
        "\n"
        "CUDA out of memory. Tried to allocate 1.00 GiB\n";
    t = parse_str(wrapped);
    assert_int_equal(t->n_reports, 2);
    r = &t->reports[0];
    assert_int_equal(r->line, 2);
    assert_int_equal(r->capacity_bytes, H(2353, GiB));
    assert_int_equal(r->free_bytes, H(106, GiB));
    assert_int_equal(r->process_bytes, H(1005, GiB));
    assert_int_equal(r->reserved_unallocated_bytes, H(41230, MiB));
    assert_int_equal(r->verdict, OD_OOM_OTHER_PROCESSES);
    assert_int_equal(t->reports[1].line, 9); /* the folded lines still count */
    assert_int_equal(t->reports[1].offset, strstr(wrapped, "CUDA out of memory. Tried to allocate 1.00") - wrapped);
    od_triage_free(t);
    /* Two words of the wording on either side of a break stay two words ("total capacity");
     * a figure split before its last decimal is one figure again. */
    t = parse_str("CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 8.00 GiB total\n"
                  "capacity; 1.2\n"
                  "5 GiB already allocated; 10.00 MiB free; 7.90 GiB reserved in total by PyTorch)\n");
    r = only_report(t);
    assert_int_equal(r->capacity_bytes, 8 * GiB);
    assert_int_equal(r->allocated_bytes, H(125, GiB));
    od_triage_free(t);
}

/* The driver's "CUDA error: out of memory" has no figures: the nvidia-smi process table
 * beside it decides (two processes on its GPU: other_processes); the GPU table alone, which
 * does not say whose memory it is, leaves it unknown. */
static void driver_oom_with_smi(void **state)
{
    od_triage *t = parse_file("tests/data/messages/driver_oom_smi.txt");
    const od_oom_report *r = only_report(t);
    assert_int_equal(r->kind, OD_KIND_DRIVER);
    assert_int_equal(r->smi_processes, 2);
    assert_int_equal(r->smi_processes_bytes, 80000 * MiB);
    assert_int_equal(r->verdict, OD_OOM_OTHER_PROCESSES);
    assert_int_equal(r->others_bytes, 80000 * MiB);
    char why[512];
    assert_true(od_triage_reason(r, why, sizeof why));
    assert_non_null(strstr(why, "2 processes"));
    od_advice h[8];
    assert_true(od_advice_for_report(r, h, 8) >= 1);
    assert_int_equal(h[0], OD_ADV_STOP_OTHERS);
    od_triage_free(t);
    t = parse_file("tests/data/messages/torch_driver_oom_smi_gpus.txt");
    r = only_report(t);
    assert_int_equal(t->n_gpus, 4);
    assert_int_equal(r->smi_processes, 0);
    assert_int_equal(r->verdict, OD_OOM_UNKNOWN);
    od_triage_free(t);
    /* one process on the report's GPU, the other on another GPU: no evidence */
    t = parse_str("RuntimeError: CUDA error: out of memory\n"
                  "| Processes:                                    |\n"
                  "|    0   N/A  N/A           31337      C   python                                12698MiB |\n"
                  "|    1   N/A  N/A            4242      C   python                                  512MiB |\n");
    r = only_report(t);
    assert_int_equal(r->smi_processes, 1);
    assert_int_equal(r->verdict, OD_OOM_UNKNOWN);
    od_triage_free(t);
}

/* DeepSpeed's own wording: its inference workspace, allocated outside PyTorch's pool. With
 * the "Requested/Free/Total" lines it prints before "Workspace is null." the figures decide. */
static void deepspeed_workspace(void **state)
{
    od_triage *t = parse_file("tests/data/messages/deepspeed_workspace.txt");
    const od_oom_report *r = only_report(t);
    assert_int_equal(r->framework, OD_FW_DEEPSPEED);
    assert_int_equal(r->kind, OD_KIND_LIBRARY);
    assert_int_equal(r->line, 16);
    assert_int_equal(r->verdict, OD_OOM_UNKNOWN);
    assert_non_null(strstr(od_advice_meaning(r), "DeepSpeed"));
    od_triage_free(t);
    t = parse_str("Requested:\t104873984\nFree:\t49217536\nTotal:\t4294443008\n"
                  "Traceback (most recent call last):\n"
                  "RuntimeError: Workspace is null.\n");
    r = only_report(t);
    assert_int_equal(r->requested_bytes, 104873984);
    assert_int_equal(r->free_bytes, 49217536);
    assert_int_equal(r->capacity_bytes, 4294443008ULL);
    assert_int_equal(r->verdict, OD_OOM_CAPACITY);
    assert_int_equal(r->missing_bytes, 104873984 - 49217536);
    char why[512];
    assert_true(od_triage_reason(r, why, sizeof why));
    assert_non_null(strstr(why, "DeepSpeed"));
    od_triage_free(t);
    /* the driver's "CUDA error: out of memory" inside DeepSpeed's frames: PyTorch's report,
     * DeepSpeed the context */
    t = parse_str("  File \"/env/lib/python3.11/site-packages/deepspeed/runtime/engine.py\", line 1474, in "
                  "_configure_zero_optimizer\n"
                  "RuntimeError: CUDA error: out of memory\n");
    r = only_report(t);
    assert_int_equal(r->framework, OD_FW_PYTORCH_CUDA);
    assert_int_equal(r->kind, OD_KIND_DRIVER);
    assert_string_equal(r->library, "deepspeed");
    od_triage_free(t);
    /* a "Requested:" line that is not DeepSpeed's triple gives no figure */
    t = parse_str("Requested: 12\nRuntimeError: Workspace is null.\n");
    r = only_report(t);
    assert_false(r->have & OD_HAVE_REQUESTED);
    od_triage_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(torch1x_capacity),    cmocka_unit_test(torch110_fragmentation),
        cmocka_unit_test(torch21_capacity_typo), cmocka_unit_test(torch22_other_process),
        cmocka_unit_test(hip_fragmentation),   cmocka_unit_test(mps_watermark),
        cmocka_unit_test(tensorflow_shape),    cmocka_unit_test(jax_resource_exhausted),
        cmocka_unit_test(jax_bfc_log),         cmocka_unit_test(tf_stats_dump),
        cmocka_unit_test(free_against_the_segment), cmocka_unit_test(held_elsewhere),
        cmocka_unit_test(tf_rocm_and_pinned_host), cmocka_unit_test(jax_program_size),
        cmocka_unit_test(cache_too_small_to_matter), cmocka_unit_test(figure_on_the_next_line),
        cmocka_unit_test(real_frag_default),   cmocka_unit_test(real_snap_train_oom),
        cmocka_unit_test(log_with_summary),    cmocka_unit_test(memory_stats_json),
        cmocka_unit_test(nvidia_smi),          cmocka_unit_test(smi_processes),
        cmocka_unit_test(nothing_found),       cmocka_unit_test(repeats_fold),
        cmocka_unit_test(absurd_and_garbage),  cmocka_unit_test(classify_by_hand),
        cmocka_unit_test(near_full_rule),
        cmocka_unit_test(self_as_other_process),
        cmocka_unit_test(malloc_async_wording),
        cmocka_unit_test(other_wordings),
        cmocka_unit_test(smi_other_processes),
        cmocka_unit_test(spill_and_garbage),
        cmocka_unit_test(vllm_kv_needed),
        cmocka_unit_test(wrapped_message),
        cmocka_unit_test(wrapped_mid_word),
        cmocka_unit_test(driver_oom_with_smi),
        cmocka_unit_test(deepspeed_workspace),
        cmocka_unit_test(memory_stats_python),
        cmocka_unit_test(memory_stats_python_edges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
