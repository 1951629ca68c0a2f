/* classify.c - a report's verdict from its figures (od_triage_classify). */
#include <string.h>

#include "base/allocpolicy.h"
#include "read/triage/scan.h"

/* A device whose free memory is within the larger of this and 1/16 of the request is full:
 * page tables, lazily loaded kernels and the two-decimal rounding of the figures take that
 * much (real reports: 32 MiB failing with 41.56 MiB free, 8.13 GiB with 8.20 GiB). */
#define FREE_MARGIN (64ULL << 20)

/* Memory held outside the job counts as the cause when it is more than the job holds and,
 * unless the processes the message lists alone hold that much, at least this: three times a
 * CUDA context with cuBLAS and cuDNN loaded (620 MiB measured on an H200), so a job's own
 * context on a small device is not taken for another process. */
#define ELSEWHERE_MIN (2ULL << 30)

/* 1 PiB: no single tensor request on any device is this large; the size was corrupted
 * (an overflowed shape, an uninitialized length). On a GPU, 16 TiB already is: the largest
 * device has 288 GB, a 72-GPU rack 13.5 TB (TF on ROCm asked for 127.99 TiB at startup,
 * keras#13889: the driver's free figure was garbage). */
#define ABSURD_BYTES (1ULL << 50)
#define ABSURD_DEVICE_BYTES (1ULL << 44)

/* An XLA program whose buffers total less than this cannot exhaust a GPU (the smallest that
 * runs JAX has 2 GiB, and JAX takes 75% of it up front) unless something else holds it. */
#define PROGRAM_SMALL (1ULL << 30)

/* Reserved-but-unallocated is absent where the allocator has no separate cache figure
 * (TF/XLA's BFC pool, MPS): it counts as zero there. */
static uint64_t ru_of(const od_oom_report *r)
{
    return (r->have & OD_HAVE_RESERVED_UNALLOC) ? r->reserved_unallocated_bytes : 0;
}

int od_tr_capped(const od_oom_report *r)
{
    return (r->have & OD_HAVE_ALLOWED) != 0 &&
           !((r->have & OD_HAVE_CAPACITY) && r->allowed_bytes >= r->capacity_bytes);
}

uint64_t od_tr_job_bytes(const od_oom_report *r)
{
    uint64_t pool = r->allocated_bytes + ru_of(r);
    return (r->have & OD_HAVE_PROCESS) && r->process_bytes > pool ? r->process_bytes : pool;
}

static int torch_like(const od_oom_report *r)
{
    return od_framework_torch_like(r->framework) && r->kind == OD_KIND_ALLOCATOR;
}

static void reset(od_oom_report *r)
{
    r->verdict = OD_OOM_UNKNOWN;
    r->have_headroom = 0;
    r->headroom_bytes = r->available_bytes = r->missing_bytes = 0;
    r->others_bytes = 0;
    r->near_full = r->size_bug = r->size_corrupt = 0;
    r->free_exceeds_request = r->free_barely_covers = r->elsewhere_dominates = r->stray_contexts = 0;
    r->stranded_small = r->cap_blocks = r->held_at_startup = r->first_pool = 0;
    r->held_elsewhere_bytes = 0;
}

/* The other processes' sum; two or more of them holding about the same small amount on this
 * GPU (within 25%, each at most 2 GiB) are the other ranks' CUDA contexts, created on the
 * wrong device (540 MiB and 1.19 GiB each in real DDP reports). */
static void other_processes(od_oom_report *r)
{
    for (size_t i = 0; i < r->n_other; i++)
        r->others_bytes += r->other[i].bytes;
    if (r->n_other < 2)
        return;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (size_t i = 0; i < r->n_other; i++) {
        lo = r->other[i].bytes < lo ? r->other[i].bytes : lo;
        hi = r->other[i].bytes > hi ? r->other[i].bytes : hi;
    }
    r->stray_contexts = lo > 0 && hi <= (2ULL << 30) && hi <= lo + lo / 4;
}

static void size_checks(od_oom_report *r)
{
    int req = (r->have & OD_HAVE_REQUESTED) != 0;
    if (req && (r->requested_bytes >= ABSURD_BYTES ||
                (r->framework != OD_FW_HOST && r->requested_bytes >= ABSURD_DEVICE_BYTES)))
        r->size_corrupt = 1;
    else if (req && (r->have & OD_HAVE_CAPACITY) && r->requested_bytes > r->capacity_bytes &&
             r->kind != OD_KIND_XLA_COMPILE && r->kind != OD_KIND_VLLM_STARTUP && r->kind != OD_KIND_KERNEL_RESOURCES &&
             r->framework != OD_FW_HOST)
        r->size_bug = 1;
}

/* The headroom is what is free (vLLM's startup, PyTorch/XLA's reserve, DeepSpeed's workspace). */
static void against_free(od_oom_report *r)
{
    r->have_headroom = 1;
    r->headroom_bytes = r->available_bytes = r->free_bytes;
    r->missing_bytes = r->requested_bytes > r->free_bytes ? r->requested_bytes - r->free_bytes : 0;
}

/* The verdicts that come from the wording rather than the pool's figures. Returns 1 when r's
 * kind decided. */
static int by_kind(od_oom_report *r)
{
    int req = (r->have & OD_HAVE_REQUESTED) != 0;
    switch (r->kind) {
    case OD_KIND_HOST_RAM:
    case OD_KIND_HOST_KILLED:
    case OD_KIND_HOST_SHM:
        r->verdict = OD_OOM_HOST_MEMORY;
        return 1;
    case OD_KIND_KERNEL_RESOURCES:
        /* the kernel's configuration asks more of each block than the hardware has */
        r->verdict = OD_OOM_CAPACITY;
        return 1;
    case OD_KIND_ENGINE_KV:
    case OD_KIND_VLLM_CACHE:
    case OD_KIND_VLLM_KV_LEN:
    case OD_KIND_VLLM_STARTUP:
        /* gpu_memory_utilization is the cap vLLM sizes itself to. */
        if (req && (r->have & OD_HAVE_FREE))
            against_free(r);
        r->verdict = OD_OOM_CAP_LIMIT;
        return 1;
    case OD_KIND_XLA_RESERVE:
        if (req && (r->have & OD_HAVE_FREE)) {
            against_free(r);
            if (r->requested_bytes <= r->free_bytes) {
                r->verdict = OD_OOM_FRAGMENTATION; /* free, but not contiguous at the bottom */
                return 1;
            }
        }
        r->verdict = req ? OD_OOM_CAPACITY : OD_OOM_UNKNOWN;
        return 1;
    case OD_KIND_LIBRARY:
        /* DeepSpeed sizes its inference workspace from the device's free memory. */
        if (r->framework == OD_FW_DEEPSPEED && req && (r->have & OD_HAVE_FREE)) {
            against_free(r);
            r->verdict = OD_OOM_CAPACITY;
            return 1;
        }
        return 0;
    case OD_KIND_DRIVER:
        /* Refused at context creation: the device was full before the job allocated anything. */
        if (r->at_context) {
            r->verdict = OD_OOM_OTHER_PROCESSES;
            return 1;
        }
        /* Several processes' lines of the same refusal (a scheduler's workers sharing one GPU):
         * each was refused what the others held. */
        if (r->log_processes >= 1) {
            r->verdict = OD_OOM_OTHER_PROCESSES;
            return 1;
        }
        /* TF's first pool sized from a garbage free-memory figure: nothing says what the
         * program needs (od_advice_meaning); TF backing off from its pool's size is logged
         * while it retries smaller: the lines are not the failure. */
        if ((r->size_corrupt || r->backoff_steps) && r->framework == OD_FW_TENSORFLOW)
            return 1;
        /* No figure of its own: the nvidia-smi process table pasted beside it is the
         * evidence. Two processes or more holding memory on the GPU means at least one is
         * not this job (a table taken while it ran lists the job too). */
        if (!req && r->smi_processes >= 2) {
            r->others_bytes = r->smi_processes_bytes;
            r->verdict = OD_OOM_OTHER_PROCESSES;
            return 1;
        }
        return 0;
    case OD_KIND_XLA_COMPILE:
        if (req && (r->have & OD_HAVE_CAPACITY)) {
            r->have_headroom = 1;
            r->headroom_bytes = r->available_bytes = r->capacity_bytes;
            r->missing_bytes = r->requested_bytes > r->capacity_bytes ? r->requested_bytes - r->capacity_bytes : 0;
        }
        r->verdict = req ? OD_OOM_CAPACITY : OD_OOM_UNKNOWN;
        return 1;
    default:
        return 0;
    }
}

/* Without a cap PyTorch fails only when cudaMalloc/hipMalloc refuses the request after the
 * cached free segments were released (ALLOCATOR.md), so less than the request was free at
 * the failure. Free memory within FREE_MARGIN of it is a full device (the driver's page
 * tables, lazily loaded kernels, figures rounded to two decimals); well above it, the free
 * figure read after the failure contradicts it. Returns -1 (that: unknown), 1 (barely
 * covers: the device is full) or 0. */
static int free_against_segment(const od_oom_report *r, int cap)
{
    /* What cudaMalloc was asked for: the segment the request takes (ALLOCATOR.md). */
    uint64_t seg = r->request_is_segment ? r->requested_bytes : od_allocsim_segment_size(r->requested_bytes);
    if (!torch_like(r) || cap || !(r->have & OD_HAVE_FREE) || r->free_bytes < seg)
        return 0;
    uint64_t margin = seg / 16 > FREE_MARGIN ? seg / 16 : FREE_MARGIN;
    return r->free_bytes - seg >= margin ? -1 : 1;
}

/* Memory on the device held by neither this job nor its pool: the processes the message
 * lists, and what no figure accounts for (another container's processes, which NVML does not
 * show; in a 1.x message, which lists no processes, everything outside the pool). Not for a
 * HIP report that lists no process (on an APU its capacity is system memory the host uses
 * too), nor without the pool's cache figure (cudaMallocAsync's report: its cache would read
 * as held elsewhere). */
static uint64_t held_elsewhere(const od_oom_report *r)
{
    uint64_t job = od_tr_job_bytes(r);
    if ((r->have & OD_HAVE_CAPACITY) && (r->have & OD_HAVE_FREE) && (r->have & OD_HAVE_RESERVED_UNALLOC) &&
        (r->framework == OD_FW_PYTORCH_CUDA || r->n_other) && r->capacity_bytes > r->free_bytes + job + r->others_bytes)
        return r->capacity_bytes - r->free_bytes - job;
    return r->others_bytes;
}

/* TensorFlow sizes its pool from the memory free when it started: when its start-up lines
 * show much of the device already held (at least ELSEWHERE_MIN and a quarter of it), that is
 * what the job lacked. */
static int held_at_startup(od_oom_report *r)
{
    /* TF sizes its first pool from what is free at start-up: a request of about that much is
     * the pool, asked for while TF starts (it retries smaller), not the job's need. */
    if (r->framework == OD_FW_TENSORFLOW && r->startup_free_bytes && r->requested_bytes <= r->startup_free_bytes &&
        r->requested_bytes >= r->startup_free_bytes / 10 * 8) {
        r->first_pool = 1;
        return 1;
    }
    if (r->framework != OD_FW_TENSORFLOW || !r->startup_total_bytes || r->startup_free_bytes > r->startup_total_bytes)
        return 0;
    uint64_t held = r->startup_total_bytes - r->startup_free_bytes;
    if (held < ELSEWHERE_MIN || held < r->startup_total_bytes / 4)
        return 0;
    r->held_at_startup = 1;
    r->held_elsewhere_bytes = held;
    r->verdict = OD_OOM_OTHER_PROCESSES;
    return 1;
}

/* The request fits what is available: fragmentation, unless the cache is too small to
 * matter or the job already fills the limit. */
static void fits_available(od_oom_report *r, uint64_t limit, int cap)
{
    uint64_t ru = ru_of(r);
    /* The memory existed, but the framework already holds >= 90% of the limit and the
     * stranded cache is small next to the request: defragmenting buys one allocation, the
     * work still does not fit. */
    int cache_small = (unsigned __int128)ru * 20 < limit; /* under 5% of the limit */
    if ((unsigned __int128)r->allocated_bytes * 10 >= (unsigned __int128)limit * 9 &&
        (ru < 2 * r->requested_bytes || cache_small)) {
        r->near_full = 1;
        r->verdict = OD_OOM_CAPACITY;
        return;
    }
    /* PyTorch: a cache smaller than the request and under 5% of the limit strands too little
     * to matter; most of the request had to come from free memory that was not there (20.48
     * MiB cached, 27.19 MiB free, 32 MiB asked on a 5.94 GiB card), or one that barely holds it
 * (26.39 MiB cached for 26 MiB asked on a 1 GiB card). */
    if (torch_like(r) && ru < r->requested_bytes + r->requested_bytes / 8 && cache_small) {
        r->stranded_small = 1;
        r->verdict = OD_OOM_CAPACITY;
        return;
    }
    (void)cap;
    r->verdict = OD_OOM_FRAGMENTATION;
}

/* A per-process cap the pool has reached: the figures say the segment cudaMalloc was asked
 * for fit under the cap, but only by less than their two-decimal rounding (half a unit of the
 * cap's figure, 1/200 of it), and it was refused while the device had room: the pool was at
 * its cap, whatever its cache held (a ROCm test at 1.05 GiB allowed, 3.20 MiB left under it,
 * failing for a 2 MiB segment). A segment that does not fit what the figures leave under the
 * cap, but fits with the cache, is fragmentation (the H200 run frag_default: 488 MiB asked,
 * 400 MiB left under a 2 GiB cap, 140 MiB cached). */
static int cap_blocks(od_oom_report *r, uint64_t used)
{
    if (!torch_like(r) || !od_tr_capped(r))
        return 0;
    uint64_t seg = r->request_is_segment ? r->requested_bytes : od_allocsim_segment_size(r->requested_bytes);
    uint64_t margin = r->rounded ? r->allowed_bytes / 200 : 0;
    uint64_t left = r->allowed_bytes > used ? r->allowed_bytes - used : 0;
    if (left < seg || left >= seg + margin || ((r->have & OD_HAVE_FREE) && r->free_bytes < seg))
        return 0;
    r->cap_blocks = 1;
    r->missing_bytes = seg > left ? seg - left : 0;
    r->verdict = OD_OOM_CAP_LIMIT;
    return 1;
}

/* The request exceeds what is available: the cap, other processes, or the work. */
static void exceeds_available(od_oom_report *r, uint64_t used, int cap, int mps)
{
    r->missing_bytes = r->requested_bytes > r->available_bytes ? r->requested_bytes - r->available_bytes : 0;
    if (cap && (mps || ((r->have & OD_HAVE_FREE) && r->free_bytes >= r->requested_bytes) ||
                (!(r->have & OD_HAVE_FREE) && used + r->requested_bytes > r->allowed_bytes))) {
        r->verdict = OD_OOM_CAP_LIMIT;
        return;
    }
    if (r->n_other > 0 && r->others_bytes >= r->missing_bytes) {
        r->verdict = OD_OOM_OTHER_PROCESSES;
        return;
    }
    r->verdict = OD_OOM_CAPACITY;
}

/* The pool's figures: what was available under the limit against the request. */
/* No request printed, but PyTorch's figures show most of the device held outside the job
 * ("15.75 GiB total capacity; 79.11 MiB already allocated; 3.62 MiB free"). */
static void no_request(od_oom_report *r)
{
    uint64_t job = od_tr_job_bytes(r), elsewhere = held_elsewhere(r);
    if (torch_like(r) && !od_tr_capped(r) && (r->have & OD_HAVE_ALLOCATED) && elsewhere > job &&
        elsewhere >= ELSEWHERE_MIN) {
        r->held_elsewhere_bytes = elsewhere;
        r->elsewhere_dominates = 1;
        r->verdict = OD_OOM_OTHER_PROCESSES;
    }
}

static void by_pool(od_oom_report *r)
{
    int cap = od_tr_capped(r);
    int mps = r->framework == OD_FW_PYTORCH_MPS;
    if (!(r->have & OD_HAVE_REQUESTED)) {
        no_request(r);
        return;
    }
    /* A compiled program this small cannot fill any GPU by itself: the memory was held
     * elsewhere (a second JAX or TF process preallocating, another framework in this one). */
    if (r->framework == OD_FW_JAX && r->program_bytes && r->program_bytes < PROGRAM_SMALL &&
        !(r->have & OD_HAVE_ALLOCATED)) {
        r->verdict = OD_OOM_OTHER_PROCESSES;
        return;
    }
    if (held_at_startup(r))
        return;
    /* a fraction setting below 1 caps what the framework may take: what it said was available
     * under it did not hold the request */
    if (r->fraction_permille && r->fraction_permille < 1000 && (r->have & OD_HAVE_FREE) &&
        r->requested_bytes > r->free_bytes) {
        against_free(r);
        r->verdict = OD_OOM_CAP_LIMIT;
        return;
    }
    if (!(r->have & OD_HAVE_ALLOCATED) || !(cap || (r->have & OD_HAVE_CAPACITY))) {
        r->verdict = OD_OOM_CAPACITY; /* only the request: nothing says the memory existed */
        return;
    }
    uint64_t ru = ru_of(r);
    uint64_t used = r->allocated_bytes + ru;
    /* MPS checks its watermark against everything the driver holds for the process. */
    if (mps && (r->have & OD_HAVE_PROCESS) && r->process_bytes > r->allocated_bytes)
        used += r->process_bytes - r->allocated_bytes;
    uint64_t limit = cap ? r->allowed_bytes : r->capacity_bytes;
    uint64_t headroom = limit > used ? limit - used : 0;
    if (!cap && (r->have & OD_HAVE_FREE) && r->free_bytes < headroom)
        headroom = r->free_bytes;
    r->have_headroom = 1;
    r->headroom_bytes = headroom;
    r->available_bytes = ru + headroom;
    if (mps && cap) {
        /* MPS raises this only when the high watermark is reached; its figures are rounded
         * to two decimals, so "left under it" may read as a few MB. */
        r->missing_bytes = r->requested_bytes > r->available_bytes ? r->requested_bytes - r->available_bytes : 0;
        r->verdict = OD_OOM_CAP_LIMIT;
        return;
    }
    int barely = free_against_segment(r, cap);
    if (barely < 0) {
        r->free_exceeds_request = 1;
        return; /* unknown: what held the memory came and went */
    }
    uint64_t job = od_tr_job_bytes(r);
    uint64_t elsewhere = held_elsewhere(r);
    r->held_elsewhere_bytes = elsewhere;
    /* (Listed processes holding the missing amount keep the rule below, which says so.) */
    int listed_cover = r->requested_bytes > r->available_bytes && r->n_other > 0 &&
                       r->others_bytes >= r->requested_bytes - r->available_bytes;
    if (torch_like(r) && !cap && !listed_cover && elsewhere >= r->requested_bytes &&
        ((elsewhere > job && (r->others_bytes > job || elsewhere >= ELSEWHERE_MIN)) ||
         (elsewhere >= ELSEWHERE_MIN && elsewhere >= r->capacity_bytes / 3))) {
        /* More of the device is held elsewhere than by the job, or a third of it (no CUDA
         * context comes near): what the job or its cache does is not what stands between it
         * and the request. */
        r->missing_bytes = r->requested_bytes > r->available_bytes ? r->requested_bytes - r->available_bytes : 0;
        r->elsewhere_dominates = 1;
        r->verdict = OD_OOM_OTHER_PROCESSES;
        return;
    }
    if (barely) {
        r->free_barely_covers = 1;
        r->verdict = OD_OOM_CAPACITY;
        return;
    }
    if (cap_blocks(r, used))
        return;
    /* The memory existed only if it did beyond what the figures' rounding may take away. */
    if (r->requested_bytes + r->cache_error_bytes <= r->available_bytes)
        fits_available(r, limit, cap);
    else
        exceeds_available(r, used, cap, mps);
}

void od_triage_classify(od_oom_report *r)
{
    reset(r);
    other_processes(r);
    size_checks(r);
    if (!by_kind(r))
        by_pool(r);
}
