/* triage.c - OOM reports, memory_summary tables, memory_stats dicts and nvidia-smi
 * output found in free text. The scanner works line by line on a private NUL-terminated
 * copy of the input, so no search can run past the end. Every figure is labelled by the
 * words printed around it rather than by its position, which is what lets one scanner
 * read all the PyTorch wordings (they reorder and rename fields between releases). */
#include "read/triage/triage.h"

#include "base/allocpolicy.h"
#include "base/lines.h"
#include "base/mem.h"
#include "base/units.h"
#include "read/profile.h"

#include <assert.h>
#include <ctype.h>
#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GROW(arr, n, cap, ok)                                                   \
    do {                                                                        \
        ok = 1;                                                                 \
        if ((n) == (cap)) {                                                     \
            size_t nc_ = (cap) ? (cap) * 2 : 4;                                 \
            void *np_ = realloc((arr), nc_ * sizeof *(arr));                    \
            if (np_) {                                                          \
                (arr) = np_;                                                    \
                (cap) = nc_;                                                    \
            } else {                                                            \
                ok = 0;                                                         \
            }                                                                   \
        }                                                                       \
    } while (0)

/* ---------- small text helpers (all bounded by [p, end)) ---------- */

static const char *find(const char *p, const char *end, const char *needle)
{
    size_t n = strlen(needle);
    if (n == 0 || p >= end || (size_t)(end - p) < n)
        return NULL;
    for (const char *last = end - n; p <= last; p++) {
        p = memchr(p, needle[0], (size_t)(last - p) + 1);
        if (!p)
            return NULL;
        if (memcmp(p, needle, n) == 0)
            return p;
    }
    return NULL;
}

static int starts(const char *p, const char *end, const char *s)
{
    size_t n = strlen(s);
    return (size_t)(end - p) >= n && memcmp(p, s, n) == 0;
}

/* Does [begin, p) end with s? */
static int ends(const char *begin, const char *p, const char *s)
{
    size_t n = strlen(s);
    return (size_t)(p - begin) >= n && memcmp(p - n, s, n) == 0;
}

static const char *skip_sp(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    return p;
}

/* An unsigned decimal integer at p; returns the end or NULL. Refuses > 19 digits. */
static const char *parse_uint(const char *p, const char *end, uint64_t *out)
{
    const char *s = p;
    uint64_t v = 0;
    while (p < end && isdigit((unsigned char)*p)) {
        if (p - s >= 19)
            return NULL;
        v = v * 10 + (uint64_t)(*p - '0');
        p++;
    }
    if (p == s)
        return NULL;
    *out = v;
    return p;
}

/* Units as the frameworks print them. OOM messages of Apple's MPS backend print "GB"
 * for 1024-based values in older builds; TF and PyTorch only ever print binary units,
 * so inside these texts every K/M/G/T means a power of 1024. */
static const struct { const char *name; uint64_t mult; } units[] = {
    {"bytes", 1}, {"KiB", 1ULL << 10}, {"MiB", 1ULL << 20}, {"GiB", 1ULL << 30},
    {"TiB", 1ULL << 40}, {"PiB", 1ULL << 50}, {"EiB", 1ULL << 60}, {"KB", 1ULL << 10},
    {"kB", 1ULL << 10}, {"MB", 1ULL << 20}, {"GB", 1ULL << 30}, {"TB", 1ULL << 40},
    {"PB", 1ULL << 50}, {"EB", 1ULL << 60}, {"B", 1},
};

typedef struct {
    const char *start, *end; /* the token, number through unit */
    uint64_t bytes;
    int rounded;             /* printed with a fractional part */
} size_tok;

/* A decimal "9.71" or "8589934592" exactly at p: its digits as one integer (mant), 10^(digits
 * after the point) (scale) and that count (frac, at most 9); 19 digits at most in all. Returns
 * the end of the number, or NULL when none starts at p or it is too long to be exact. */
static const char *read_decimal(const char *p, const char *end, uint64_t *mant, uint64_t *scale,
                                int *frac)
{
    int digits = 0;
    *mant = 0;
    *scale = 1;
    *frac = 0;
    if (p >= end || !isdigit((unsigned char)*p))
        return NULL;
    while (p < end && isdigit((unsigned char)*p)) {
        if (++digits > 19)
            return NULL;
        *mant = *mant * 10 + (uint64_t)(*p++ - '0');
    }
    if (p + 1 < end && *p == '.' && isdigit((unsigned char)p[1])) {
        p++;
        while (p < end && isdigit((unsigned char)*p)) {
            if (++digits > 19 || *frac >= 9)
                return NULL;
            *mant = *mant * 10 + (uint64_t)(*p++ - '0');
            *scale *= 10;
            (*frac)++;
        }
    }
    return p;
}

/* A size "2.00 GiB", "1.50GiB", "8589934592 bytes", "0 B" exactly at p. A figure with
 * a fractional part is converted exactly as printed (2.00 GiB = 2*2^30, 9.71 GiB =
 * round(971 * 2^30 / 100)). */
static int parse_size(const char *p, const char *end, size_tok *t)
{
    const char *s = p;
    uint64_t mant, scale;
    int frac;
    if (!(p = read_decimal(p, end, &mant, &scale, &frac)))
        return 0;
    const char *u = skip_sp(p, end);
    if (u - p > 1)
        return 0;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (!starts(u, end, units[i].name))
            continue;
        const char *ue = u + strlen(units[i].name);
        if (ue < end && isalnum((unsigned char)*ue))
            continue;
        unsigned __int128 v = (unsigned __int128)mant * units[i].mult;
        v = (v + scale / 2) / scale;
        if (v > (unsigned __int128)(UINT64_MAX / 2))
            return 0; /* absurd: refuse rather than wrap */
        t->start = s;
        t->end = ue;
        t->bytes = (uint64_t)v;
        t->rounded = frac > 0;
        return 1;
    }
    return 0;
}

/* The next size token in [p, end) that starts at a word boundary. */
static int next_size(const char *p, const char *end, const char *line, size_tok *t)
{
    for (; p < end; p++) {
        if (!isdigit((unsigned char)*p))
            continue;
        if (p > line && (isalnum((unsigned char)p[-1]) || p[-1] == '.' || p[-1] == '_'))
            continue;
        if (parse_size(p, end, t))
            return 1;
        while (p + 1 < end && (isdigit((unsigned char)p[1]) || p[1] == '.'))
            p++;
    }
    return 0;
}

/* XLA's compact sizes "21.95G", "530.00M", "0B", "384.0K" (1024-based, no space, no
 * "iB") exactly at p. */
static int parse_xla_size(const char *p, const char *end, size_tok *t)
{
    const char *s = p;
    uint64_t mant, scale;
    int frac;
    if (!(p = read_decimal(p, end, &mant, &scale, &frac)) || p >= end)
        return 0;
    static const char letters[] = "BKMGTP";
    const char *l = strchr(letters, *p);
    if (!l || *p == '\0' || (p + 1 < end && isalnum((unsigned char)p[1])))
        return 0;
    unsigned __int128 v = (unsigned __int128)mant << (10 * (l - letters));
    v = (v + scale / 2) / scale;
    if (v > (unsigned __int128)(UINT64_MAX / 2))
        return 0;
    t->start = s;
    t->end = p + 1;
    t->bytes = (uint64_t)v;
    t->rounded = frac > 0;
    return 1;
}

/* ---------- names ---------- */

const char *od_framework_name(od_framework f)
{
    switch (f) {
    case OD_FW_PYTORCH_CUDA: return "pytorch-cuda";
    case OD_FW_PYTORCH_ROCM: return "pytorch-rocm";
    case OD_FW_PYTORCH_MPS: return "pytorch-mps";
    case OD_FW_TENSORFLOW: return "tensorflow";
    case OD_FW_JAX: return "jax";
    case OD_FW_PYTORCH_XLA: return "pytorch-xla";
    case OD_FW_VLLM: return "vllm";
    case OD_FW_DEEPSPEED: return "deepspeed";
    case OD_FW_NCCL: return "nccl";
    case OD_FW_CUBLAS: return "cublas";
    case OD_FW_CUDNN: return "cudnn";
    case OD_FW_HOST: return "host";
    case OD_FW_ONNXRUNTIME: return "onnxruntime";
    case OD_FW_OTHER: return "other";
    }
    return "unknown";
}

const char *od_oom_verdict_name(od_oom_verdict v)
{
    switch (v) {
    case OD_OOM_UNKNOWN: return "unknown";
    case OD_OOM_FRAGMENTATION: return "fragmentation";
    case OD_OOM_CAP_LIMIT: return "cap_limit";
    case OD_OOM_OTHER_PROCESSES: return "other_processes";
    case OD_OOM_CAPACITY: return "capacity";
    case OD_OOM_HOST_MEMORY: return "host_memory";
    }
    return "unknown";
}

const char *od_oom_kind_name(od_oom_kind k)
{
    switch (k) {
    case OD_KIND_ALLOCATOR: return "allocator";
    case OD_KIND_DRIVER: return "driver";
    case OD_KIND_LIBRARY: return "library";
    case OD_KIND_HOST_RAM: return "host_ram";
    case OD_KIND_HOST_KILLED: return "oom_killer";
    case OD_KIND_HOST_SHM: return "shared_memory";
    case OD_KIND_VLLM_CACHE: return "vllm_cache_blocks";
    case OD_KIND_VLLM_KV_LEN: return "vllm_max_model_len";
    case OD_KIND_VLLM_STARTUP: return "vllm_startup_free";
    case OD_KIND_XLA_COMPILE: return "xla_compile";
    case OD_KIND_XLA_RESERVE: return "xla_reserve";
    }
    return "allocator";
}

unsigned od_tf_dtype_size(const char *name, size_t len)
{
    static const struct { const char *n; unsigned s; } t[] = {
        {"float", 4}, {"float32", 4}, {"double", 8}, {"float64", 8}, {"half", 2},
        {"float16", 2}, {"bfloat16", 2}, {"int8", 1}, {"uint8", 1}, {"int16", 2},
        {"uint16", 2}, {"int32", 4}, {"uint32", 4}, {"int64", 8}, {"uint64", 8},
        {"bool", 1}, {"complex64", 8}, {"complex128", 16}, {"qint8", 1}, {"quint8", 1},
        {"qint16", 2}, {"quint16", 2}, {"qint32", 4}, {"float8_e4m3fn", 1},
        {"float8_e5m2", 1},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (strlen(t[i].n) == len && memcmp(t[i].n, name, len) == 0)
            return t[i].s;
    return 0;
}

/* ---------- the verdict ---------- */

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

/* "N allowed" equal to (or above) the device is no cap: no fraction was set. */
static int capped(const od_oom_report *r)
{
    return (r->have & OD_HAVE_ALLOWED) != 0 &&
           !((r->have & OD_HAVE_CAPACITY) && r->allowed_bytes >= r->capacity_bytes);
}

/* What this job holds: its process figure where printed (pool plus context and libraries),
 * else its pool. */
static uint64_t job_of(const od_oom_report *r)
{
    uint64_t pool = r->allocated_bytes + ru_of(r);
    return (r->have & OD_HAVE_PROCESS) && r->process_bytes > pool ? r->process_bytes : pool;
}

void od_triage_classify(od_oom_report *r)
{
    r->verdict = OD_OOM_UNKNOWN;
    r->have_headroom = 0;
    r->headroom_bytes = r->available_bytes = r->missing_bytes = 0;
    r->others_bytes = 0;
    r->near_full = r->size_bug = r->size_corrupt = 0;
    r->free_exceeds_request = r->free_barely_covers = r->elsewhere_dominates = r->stray_contexts = 0;
    r->stranded_small = 0;
    r->held_elsewhere_bytes = 0;
    for (size_t i = 0; i < r->n_other; i++)
        r->others_bytes += r->other[i].bytes;
    /* Two or more other processes holding about the same small amount on this GPU (within
     * 25%, each at most 2 GiB): the other ranks' CUDA contexts, created on the wrong device
     * (540 MiB and 1.19 GiB each in real DDP reports). */
    if (r->n_other >= 2) {
        uint64_t lo = UINT64_MAX, hi = 0;
        for (size_t i = 0; i < r->n_other; i++) {
            lo = r->other[i].bytes < lo ? r->other[i].bytes : lo;
            hi = r->other[i].bytes > hi ? r->other[i].bytes : hi;
        }
        r->stray_contexts = lo > 0 && hi <= (2ULL << 30) && hi <= lo + lo / 4;
    }
    int req = (r->have & OD_HAVE_REQUESTED) != 0;
    if (req && (r->requested_bytes >= ABSURD_BYTES ||
                (r->framework != OD_FW_HOST && r->requested_bytes >= ABSURD_DEVICE_BYTES)))
        r->size_corrupt = 1;
    else if (req && (r->have & OD_HAVE_CAPACITY) && r->requested_bytes > r->capacity_bytes &&
             r->kind != OD_KIND_XLA_COMPILE && r->kind != OD_KIND_VLLM_STARTUP &&
             r->framework != OD_FW_HOST)
        r->size_bug = 1;
    switch (r->kind) {
    case OD_KIND_HOST_RAM:
    case OD_KIND_HOST_KILLED:
    case OD_KIND_HOST_SHM:
        r->verdict = OD_OOM_HOST_MEMORY;
        return;
    case OD_KIND_VLLM_CACHE:
    case OD_KIND_VLLM_KV_LEN:
    case OD_KIND_VLLM_STARTUP:
        /* gpu_memory_utilization is the cap vLLM sizes itself to. */
        if (req && (r->have & OD_HAVE_FREE)) {
            r->have_headroom = 1;
            r->headroom_bytes = r->available_bytes = r->free_bytes;
            r->missing_bytes = r->requested_bytes > r->free_bytes ? r->requested_bytes - r->free_bytes : 0;
        }
        r->verdict = OD_OOM_CAP_LIMIT;
        return;
    case OD_KIND_XLA_RESERVE:
        if (req && (r->have & OD_HAVE_FREE)) {
            r->have_headroom = 1;
            r->headroom_bytes = r->available_bytes = r->free_bytes;
            if (r->requested_bytes <= r->free_bytes) {
                r->verdict = OD_OOM_FRAGMENTATION; /* free, but not contiguous at the bottom */
                return;
            }
            r->missing_bytes = r->requested_bytes - r->free_bytes;
        }
        r->verdict = req ? OD_OOM_CAPACITY : OD_OOM_UNKNOWN;
        return;
    case OD_KIND_LIBRARY:
        /* DeepSpeed sizes its inference workspace from the device's free memory. */
        if (r->framework == OD_FW_DEEPSPEED && req && (r->have & OD_HAVE_FREE)) {
            r->have_headroom = 1;
            r->headroom_bytes = r->available_bytes = r->free_bytes;
            r->missing_bytes = r->requested_bytes > r->free_bytes ? r->requested_bytes - r->free_bytes : 0;
            r->verdict = OD_OOM_CAPACITY;
            return;
        }
        break;
    case OD_KIND_DRIVER:
        /* TF's first pool sized from a garbage free-memory figure: nothing says what the
         * program needs (od_advice_meaning). */
        if (r->size_corrupt && r->framework == OD_FW_TENSORFLOW)
            return;
        /* TF backing off from its pool's size is logged while it retries smaller: the lines
         * are not the failure (an exception after them is, and is its own report). */
        if (r->backoff_steps && r->framework == OD_FW_TENSORFLOW)
            return;
        /* No figure of its own: the nvidia-smi process table pasted beside it is the
         * evidence. Two processes or more holding memory on the GPU means at least one is
         * not this job (a table taken while it ran lists the job too). */
        if (!req && r->smi_processes >= 2) {
            r->others_bytes = r->smi_processes_bytes;
            r->verdict = OD_OOM_OTHER_PROCESSES;
            return;
        }
        break;
    case OD_KIND_XLA_COMPILE:
        if (req && (r->have & OD_HAVE_CAPACITY)) {
            r->have_headroom = 1;
            r->headroom_bytes = r->available_bytes = r->capacity_bytes;
            r->missing_bytes = r->requested_bytes > r->capacity_bytes ? r->requested_bytes - r->capacity_bytes : 0;
        }
        r->verdict = req ? OD_OOM_CAPACITY : OD_OOM_UNKNOWN;
        return;
    default:
        break;
    }
    int cap = capped(r);
    int mps = r->framework == OD_FW_PYTORCH_MPS;
    if (!req)
        return;
    /* A compiled program this small cannot fill any GPU by itself: the memory was held
     * elsewhere (a second JAX or TF process preallocating, another framework in this one). */
    if (r->framework == OD_FW_JAX && r->program_bytes && r->program_bytes < PROGRAM_SMALL &&
        !(r->have & OD_HAVE_ALLOCATED)) {
        r->verdict = OD_OOM_OTHER_PROCESSES;
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
    int torch = (r->framework == OD_FW_PYTORCH_CUDA || r->framework == OD_FW_PYTORCH_ROCM) &&
                r->kind == OD_KIND_ALLOCATOR;
    int barely = 0; /* the device's free memory only just covers the request: it is full */
    /* What cudaMalloc was asked for: the segment the request takes (ALLOCATOR.md). */
    uint64_t seg = r->request_is_segment ? r->requested_bytes : od_allocsim_segment_size(r->requested_bytes);
    if (torch && !cap && (r->have & OD_HAVE_FREE) && r->free_bytes >= seg) {
        /* Without a cap PyTorch fails only when cudaMalloc/hipMalloc refuses the request after
         * the cached free segments were released (ALLOCATOR.md), so less than the request was
         * free at the failure. Free memory within FREE_MARGIN of it is a full device (the
         * driver's page tables, lazily loaded kernels, figures rounded to two decimals);
         * well above it, the free figure read after the failure contradicts it. */
        uint64_t margin = seg / 16 > FREE_MARGIN ? seg / 16 : FREE_MARGIN;
        if (r->free_bytes - seg >= margin) {
            r->free_exceeds_request = 1;
            return; /* unknown: what held the memory came and went */
        }
        barely = 1;
    }
    /* Memory on the device held by neither this job nor its pool: the processes the message
     * lists, and what no figure accounts for (another container's processes, which NVML does
     * not show; in a 1.x message, which lists no processes, everything outside the pool). */
    uint64_t job = job_of(r);
    uint64_t elsewhere = r->others_bytes;
    /* Not for a HIP report that lists no process (on an APU its capacity is system memory
     * the host uses too), nor without the pool's cache figure (cudaMallocAsync's report:
     * its cache would read as held elsewhere). */
    if ((r->have & OD_HAVE_CAPACITY) && (r->have & OD_HAVE_FREE) && (r->have & OD_HAVE_RESERVED_UNALLOC) &&
        (r->framework == OD_FW_PYTORCH_CUDA || r->n_other) &&
        r->capacity_bytes > r->free_bytes + job + r->others_bytes)
        elsewhere = r->capacity_bytes - r->free_bytes - job;
    r->held_elsewhere_bytes = elsewhere;
    /* (Listed processes holding the missing amount keep the rule below, which says so.) */
    int listed_cover = r->requested_bytes > r->available_bytes && r->n_other > 0 &&
                       r->others_bytes >= r->requested_bytes - r->available_bytes;
    if (torch && !cap && !listed_cover && elsewhere > job && elsewhere >= r->requested_bytes &&
        (r->others_bytes > job || elsewhere >= ELSEWHERE_MIN)) {
        /* More of the device is held elsewhere than by the job: what the job or its cache does
         * is not what stands between it and the request. */
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
    if (r->requested_bytes <= r->available_bytes) {
        /* The memory existed, but the framework already holds >= 90% of the limit and the
         * stranded cache is small next to the request: defragmenting buys one allocation,
         * the work still does not fit. */
        int cache_small = (unsigned __int128)ru * 20 < limit; /* under 5% of the limit */
        if ((unsigned __int128)r->allocated_bytes * 10 >= (unsigned __int128)limit * 9 &&
            (ru < 2 * r->requested_bytes || cache_small)) {
            r->near_full = 1;
            r->verdict = OD_OOM_CAPACITY;
            return;
        }
        /* PyTorch: a cache smaller than the request and under 5% of the limit strands too
         * little to matter; most of the request had to come from free memory that was not
         * there (20.48 MiB cached, 27.19 MiB free, 32 MiB asked on a 5.94 GiB card). */
        if (torch && ru < r->requested_bytes && cache_small) {
            r->stranded_small = 1;
            r->verdict = OD_OOM_CAPACITY;
            return;
        }
        r->verdict = OD_OOM_FRAGMENTATION;
        return;
    }
    r->missing_bytes = r->requested_bytes - r->available_bytes;
    if (cap) {
        if (mps || ((r->have & OD_HAVE_FREE) && r->free_bytes >= r->requested_bytes) ||
            (!(r->have & OD_HAVE_FREE) && used + r->requested_bytes > r->allowed_bytes)) {
            r->verdict = OD_OOM_CAP_LIMIT;
            return;
        }
    }
    if (r->n_other > 0 && r->others_bytes >= r->missing_bytes) {
        r->verdict = OD_OOM_OTHER_PROCESSES;
        return;
    }
    r->verdict = OD_OOM_CAPACITY;
}

int od_triage_reason(const od_oom_report *r, char *buf, size_t size)
{
    char a[32], b[32], c[32];
    switch (r->kind) {
    case OD_KIND_HOST_RAM:
        if (!strcmp(r->library, "tf-pinned") && (r->have & OD_HAVE_CAPACITY) && (r->have & OD_HAVE_ALLOCATED))
            snprintf(buf, size, "TensorFlow's pinned host allocator could not get %s: %s of its %s limit was in use "
                                "(TF_GPU_HOST_MEM_LIMIT_IN_MB): host memory, not the GPU's",
                     od_format_iec(r->requested_bytes, a, sizeof a), od_format_iec(r->allocated_bytes, b, sizeof b),
                     od_format_iec(r->capacity_bytes, c, sizeof c));
        else if (!strcmp(r->library, "tf-pinned"))
            snprintf(buf, size, "TensorFlow's pinned host allocator could not get %s: its limit "
                                "(TF_GPU_HOST_MEM_LIMIT_IN_MB, 64 GiB by default) or the host's RAM ran out, not the "
                                "GPU's memory",
                     od_format_iec(r->requested_bytes, a, sizeof a));
        else if (r->have & OD_HAVE_REQUESTED)
            snprintf(buf, size, "the CPU allocator could not get %s of host RAM: the machine's memory, not the GPU's, ran out",
                     od_format_iec(r->requested_bytes, a, sizeof a));
        else
            snprintf(buf, size, "the CPU allocator could not get host RAM: the machine's memory, not the GPU's, ran out");
        return 1;
    case OD_KIND_HOST_KILLED:
        if (r->have & OD_HAVE_PROCESS)
            snprintf(buf, size, "the kernel's OOM killer ended a process holding %s of RAM (SIGKILL): host memory ran out",
                     od_format_iec(r->process_bytes, a, sizeof a));
        else
            snprintf(buf, size, "a process was killed with SIGKILL (signal 9, exit code -9), which is what the kernel's "
                                "OOM killer does when host RAM runs out");
        return 1;
    case OD_KIND_HOST_SHM:
        snprintf(buf, size, "shared memory (/dev/shm) ran out: what goes through it (DataLoader batches, NCCL's "
                            "intra-node buffers) did not fit");
        return 1;
    case OD_KIND_VLLM_CACHE:
        snprintf(buf, size, "after the weights and the profiling run, nothing was left under gpu_memory_utilization for "
                            "the KV cache blocks: the utilization cap binds");
        return 1;
    case OD_KIND_VLLM_KV_LEN:
        if (r->have_headroom && r->max_model_len)
            snprintf(buf, size, "one sequence of max_model_len %llu needs %s of KV cache, only %s is left under "
                                "gpu_memory_utilization: the utilization cap binds",
                     (unsigned long long)r->max_model_len, od_format_iec(r->requested_bytes, a, sizeof a),
                     od_format_iec(r->free_bytes, b, sizeof b));
        else if (r->max_model_len && r->kv_cache_tokens)
            snprintf(buf, size, "the KV cache left under gpu_memory_utilization holds %llu tokens, fewer than one "
                                "sequence of max_model_len %llu: the utilization cap binds",
                     (unsigned long long)r->kv_cache_tokens, (unsigned long long)r->max_model_len);
        else
            snprintf(buf, size, "the KV cache left under gpu_memory_utilization holds fewer tokens than one sequence of "
                                "max_model_len: the utilization cap binds");
        return 1;
    case OD_KIND_VLLM_STARTUP:
        if (!r->have_headroom)
            return 0;
        snprintf(buf, size, "gpu_memory_utilization asks for %s of the device, but only %s was free at startup: "
                            "%s short, held by other processes or a previous engine",
                 od_format_iec(r->requested_bytes, a, sizeof a), od_format_iec(r->free_bytes, b, sizeof b),
                 od_format_iec(r->missing_bytes, c, sizeof c));
        return 1;
    case OD_KIND_XLA_COMPILE:
        if (!r->have_headroom)
            return 0;
        snprintf(buf, size, "the compiled program needs %s of a %s memory space: %s over before anything ran",
                 od_format_iec(r->requested_bytes, a, sizeof a), od_format_iec(r->capacity_bytes, b, sizeof b),
                 od_format_iec(r->missing_bytes, c, sizeof c));
        return 1;
    case OD_KIND_LIBRARY:
        if (r->framework != OD_FW_DEEPSPEED || !r->have_headroom)
            break;
        snprintf(buf, size, "DeepSpeed's inference workspace needs %s and the device had %s free: %s short (what "
                            "PyTorch caches or other processes hold is not free to it)",
                 od_format_iec(r->requested_bytes, a, sizeof a), od_format_iec(r->free_bytes, b, sizeof b),
                 od_format_iec(r->missing_bytes, c, sizeof c));
        return 1;
    case OD_KIND_DRIVER:
        if (r->size_corrupt && r->framework == OD_FW_TENSORFLOW) {
            snprintf(buf, size, "%s requested, more than any device has: the size of TensorFlow's first pool, from "
                                "a free-memory figure the driver got wrong, not the program's need",
                     od_format_iec(r->requested_bytes, a, sizeof a));
            return 1;
        }
        if (r->backoff_steps && r->framework == OD_FW_TENSORFLOW) {
            snprintf(buf, size, "TensorFlow asked for %s for its pool and backed off by 10%% %u time%s (to %s): "
                                "these lines are logged while it retries smaller, and are not the failure; an "
                                "'OOM when allocating' after them would be",
                     od_format_iec(r->requested_bytes, a, sizeof a), r->backoff_steps, r->backoff_steps == 1 ? "" : "s",
                     od_format_iec(r->backoff_last_bytes, b, sizeof b));
            return 1;
        }
        if (r->verdict != OD_OOM_OTHER_PROCESSES || r->smi_processes < 2)
            break;
        snprintf(buf, size, "the driver refused memory with no figures, and nvidia-smi beside the error shows %u "
                            "processes holding %s on the GPU: at least one of them is not this job",
                 r->smi_processes, od_format_iec(r->smi_processes_bytes, a, sizeof a));
        return 1;
    case OD_KIND_XLA_RESERVE:
        if (!r->have_headroom)
            return 0;
        if (r->verdict == OD_OOM_FRAGMENTATION)
            snprintf(buf, size, "%s requested <= %s free, but not in one contiguous range: the memory existed, "
                                "fragmented",
                     od_format_iec(r->requested_bytes, a, sizeof a), od_format_iec(r->free_bytes, b, sizeof b));
        else
            snprintf(buf, size, "%s requested > %s free on the device: %s missing",
                     od_format_iec(r->requested_bytes, a, sizeof a), od_format_iec(r->free_bytes, b, sizeof b),
                     od_format_iec(r->missing_bytes, c, sizeof c));
        return 1;
    default:
        break;
    }
    if (r->free_exceeds_request) {
        snprintf(buf, size, "%s requested, yet the device had %s free when the message was written: without a cap "
                            "PyTorch fails only when the driver refuses memory, so the free figure is not the "
                            "state at the failure",
                 od_format_iec(r->requested_bytes, a, sizeof a), od_format_iec(r->free_bytes, b, sizeof b));
        return 1;
    }
    if (r->free_barely_covers) {
        int n = snprintf(buf, size, "%s requested with only %s free: the device is full (its last megabytes are "
                                    "not all allocatable, and the figures are rounded); %s is reserved but unallocated",
                         od_format_iec(r->requested_bytes, a, sizeof a), od_format_iec(r->free_bytes, b, sizeof b),
                         od_format_iec(ru_of(r), c, sizeof c));
        if (r->n_other && n > 0 && (size_t)n < size)
            snprintf(buf + n, size - (size_t)n, ", and %zu other process%s %s", r->n_other,
                     r->n_other == 1 ? " holds" : "es hold", od_format_iec(r->others_bytes, a, sizeof a));
        return 1;
    }
    if (r->elsewhere_dominates) {
        char d[32], e[32];
        od_format_iec(job_of(r), c, sizeof c);
        od_format_iec(r->requested_bytes, d, sizeof d);
        od_format_iec(r->free_bytes, e, sizeof e);
        /* what no listed process accounts for, under 1 GiB, is rounding and contexts */
        if (r->n_other && r->others_bytes + (1ULL << 30) > r->held_elsewhere_bytes)
            snprintf(buf, size, "%zu other process%s %s on this GPU, more than this job's %s: %s requested, "
                                "%s free",
                     r->n_other, r->n_other == 1 ? " holds" : "es hold", od_format_iec(r->others_bytes, a, sizeof a), c,
                     d, e);
        else if (r->n_other)
            snprintf(buf, size, "%s of the device is held outside this job, more than its own %s: %s by the %zu "
                                "process%s the message lists, the rest by none it lists (another container's, "
                                "which NVML does not show from this one); %s requested, %s free",
                     od_format_iec(r->held_elsewhere_bytes, a, sizeof a), c,
                     od_format_iec(r->others_bytes, b, sizeof b), r->n_other, r->n_other == 1 ? "" : "es", d, e);
        else if (r->have & OD_HAVE_PROCESS)
            snprintf(buf, size, "%s of the device is held by no process the message lists, more than this job's %s: "
                                "another container's processes, which NVML does not show from this one; %s "
                                "requested, %s free",
                     od_format_iec(r->held_elsewhere_bytes, a, sizeof a), c, d, e);
        else
            snprintf(buf, size, "%s of the device is held outside PyTorch's pool, more than the pool's own %s: by "
                                "other processes or other libraries in this one, which this wording does not list; "
                                "%s requested, %s free",
                     od_format_iec(r->held_elsewhere_bytes, a, sizeof a), c, d, e);
        return 1;
    }
    if (r->framework == OD_FW_JAX && r->program_bytes && r->verdict == OD_OOM_OTHER_PROCESSES) {
        snprintf(buf, size, "%s requested, and the compiled program needs only %s in all (XLA's total allocation): "
                            "it cannot fill a GPU by itself, so the memory was held elsewhere (another JAX or TF "
                            "process preallocating, or another framework in this one)",
                 od_format_iec(r->requested_bytes, a, sizeof a), od_format_iec(r->program_bytes, b, sizeof b));
        return 1;
    }
    if (r->verdict == OD_OOM_CAPACITY && !r->have_headroom && r->program_bytes) {
        snprintf(buf, size, "%s requested; the compiled program needs %s in all (XLA's total allocation): it runs "
                            "only where that much is free",
                 od_format_iec(r->requested_bytes, a, sizeof a), od_format_iec(r->program_bytes, b, sizeof b));
        return 1;
    }
    if (r->verdict == OD_OOM_CAPACITY && !r->have_headroom) {
        snprintf(buf, size, "%s requested and no pool figures printed: an allocation failed for want of memory, "
                            "so the work did not fit what was left",
                 od_format_iec(r->requested_bytes, a, sizeof a));
        return 1;
    }
    if (r->stranded_small) {
        char e[32];
        int cap = capped(r);
        snprintf(buf, size, "%s requested <= %s available, so fragmentation is the proximate cause; but only %s "
                            "is stranded in the cache (under 5%% of the %s) and %s is %s: the %s is full",
                 od_format_iec(r->requested_bytes, a, sizeof a), od_format_iec(r->available_bytes, b, sizeof b),
                 od_format_iec(ru_of(r), c, sizeof c), cap ? "cap" : "device",
                 od_format_iec(r->headroom_bytes, e, sizeof e), cap ? "left under it" : "free", cap ? "cap" : "device");
        return 1;
    }
    if (r->near_full) {
        uint64_t limit = capped(r) ? r->allowed_bytes : r->capacity_bytes;
        char lim[32];
        snprintf(buf, size, "%s requested <= %s available, so fragmentation is the proximate cause; but %s of %s "
                            "is already allocated (>= 90%%): the work does not fit",
                 od_format_iec(r->requested_bytes, a, sizeof a), od_format_iec(r->available_bytes, b, sizeof b),
                 od_format_iec(r->allocated_bytes, c, sizeof c), od_format_iec(limit, lim, sizeof lim));
        return 1;
    }
    return 0;
}

/* ---------- the scanner ---------- */

typedef struct {
    const char *buf;
    size_t len;
    od_triage *t;
    size_t cap_reports, cap_summaries, cap_gpus, cap_procs;
    int nomem;
    int jax_input;          /* the input mentions JAX/XLA: BFC lines are XLA's */
    int xla_torch_input;    /* the input is PyTorch/XLA's (torch_xla, XRT, PJRT) */
    int tf_input;           /* the input mentions TensorFlow */
    int onnx_input;         /* the input mentions onnxruntime */
    size_t last_idx;        /* the report the previous wording line made or joined */
    uint64_t last_lineno;   /* its line; 0 when none */
    od_oom_report *open_bfc; /* TF/XLA report still collecting lines (index below) */
    size_t open_idx;
    int open_has_exc;
} scan;

static od_oom_report *new_report(scan *s, od_framework fw, const char *line, uint64_t lineno)
{
    int ok;
    GROW(s->t->reports, s->t->n_reports, s->cap_reports, ok);
    if (!ok) {
        s->nomem = 1;
        return NULL;
    }
    od_oom_report *r = &s->t->reports[s->t->n_reports++];
    memset(r, 0, sizeof *r);
    r->framework = fw;
    r->offset = (uint64_t)(line - s->buf);
    r->line = lineno;
    r->occurrences = 1;
    return r;
}

static void add_other(scan *s, od_oom_report *r, uint64_t pid, uint64_t bytes)
{
    od_oom_process *np = realloc(r->other, (r->n_other + 1) * sizeof *np);
    if (!np) {
        s->nomem = 1;
        return;
    }
    r->other = np;
    r->other[r->n_other].pid = pid;
    r->other[r->n_other].bytes = bytes;
    r->n_other++;
}

static void set(od_oom_report *r, unsigned bit, uint64_t *field, const size_tok *t)
{
    if (r->have & bit)
        return; /* the first figure wins: later text may be an unrelated echo */
    r->have |= bit;
    *field = t->bytes;
    if (t->rounded)
        r->rounded = 1;
}

/* The device index printed after marker ("GPU ", "on device "), if any. */
static void parse_device_after(od_oom_report *r, const char *p, const char *end, const char *marker)
{
    const char *g = find(p, end, marker);
    uint64_t d;
    if (g && parse_uint(g + strlen(marker), end, &d) && d < 4096) {
        r->device = (int)d;
        r->have |= OD_HAVE_DEVICE;
    }
}

static void parse_device(od_oom_report *r, const char *p, const char *end)
{
    parse_device_after(r, p, end, "GPU ");
}

/* A PyTorch CUDA/ROCm message: label each size by the words around it. */
static void parse_torch(scan *s, od_oom_report *r, const char *msg, const char *end)
{
    size_tok t;
    uint64_t reserved_total = 0;
    int have_reserved_total = 0, cached_wording = 0;
    parse_device(r, msg, end);
    for (const char *p = msg; next_size(p, end, msg, &t); p = t.end) {
        const char *a = t.end;
        if (ends(msg, t.start, "Tried to allocate ") || ends(msg, t.start, "Tried to allocate more than "))
            set(r, OD_HAVE_REQUESTED, &r->requested_bytes, &t);
        else if (ends(msg, t.start, "total capacity of ") || ends(msg, t.start, "total capacty of ") ||
                 starts(a, end, " total capacity"))
            set(r, OD_HAVE_CAPACITY, &r->capacity_bytes, &t);
        else if (starts(a, end, " already allocated") || starts(a, end, " is allocated by PyTorch"))
            set(r, OD_HAVE_ALLOCATED, &r->allocated_bytes, &t);
        else if (starts(a, end, " is reserved by PyTorch but unallocated") ||
                 starts(a, end, " cached)") || starts(a, end, " cached;")) {
            /* before 1.4, "N cached" is already reserved - allocated */
            set(r, OD_HAVE_RESERVED_UNALLOC, &r->reserved_unallocated_bytes, &t);
            cached_wording |= a[1] == 'c';
        }
        else if (starts(a, end, " reserved in total by PyTorch")) {
            if (!have_reserved_total) {
                reserved_total = t.bytes;
                have_reserved_total = 1;
                if (t.rounded)
                    r->rounded = 1;
            }
        } else if (starts(a, end, " allowed"))
            set(r, OD_HAVE_ALLOWED, &r->allowed_bytes, &t);
        else if ((starts(a, end, " free") && !(a + 5 < end && isalnum((unsigned char)a[5]))) ||
                 starts(a, end, " is free"))
            set(r, OD_HAVE_FREE, &r->free_bytes, &t);
        else if (starts(a, end, " memory in use")) {
            if (ends(msg, t.start, "this process has ") || ends(msg, t.start, "This process has "))
                set(r, OD_HAVE_PROCESS, &r->process_bytes, &t);
            else if (ends(msg, t.start, " has ")) {
                /* "Process 31337 has 12.40 GiB memory in use" */
                const char *q = t.start - 5, *d = q;
                while (d > msg && isdigit((unsigned char)d[-1]))
                    d--;
                uint64_t pid = 0;
                if (d < q)
                    parse_uint(d, q, &pid);
                add_other(s, r, pid, t.bytes);
                if (t.rounded)
                    r->rounded = 1;
            }
        }
    }
    /* 1.x prints the pool's total: reserved-but-unallocated = reserved - allocated. */
    if (have_reserved_total && (r->have & OD_HAVE_ALLOCATED) && !(r->have & OD_HAVE_RESERVED_UNALLOC)) {
        r->reserved_unallocated_bytes =
            reserved_total > r->allocated_bytes ? reserved_total - r->allocated_bytes : 0;
        r->have |= OD_HAVE_RESERVED_UNALLOC;
    }
    /* The caching allocator prints the size it tried to reserve, not the tensor's; before 1.4
     * ("N cached") the request rounded to 512 B (real reports: 1.12 MiB, 12.50 MiB, 1024 KiB,
     * none a segment size). */
    r->request_is_segment = (r->have & OD_HAVE_REQUESTED) != 0 && !cached_wording;
    r->msg_hint_expandable = find(msg, end, "expandable_segments") != NULL;
    r->garbage_figure = find(msg, end, "17179869184.00 GiB") != NULL;
    if (find(msg, end, "CUDA error: out of memory") && !(r->have & OD_HAVE_REQUESTED))
        r->kind = OD_KIND_DRIVER;
    /* In a container the process sees itself under another PID: without a "this process"
     * line, a "Process N" holding the pool plus at most 2 GiB of context and libraries
     * is this process. */
    if (!(r->have & OD_HAVE_PROCESS) && r->n_other > 0 && (r->have & OD_HAVE_ALLOCATED)) {
        uint64_t pool = r->allocated_bytes + ((r->have & OD_HAVE_RESERVED_UNALLOC) ? r->reserved_unallocated_bytes : 0);
        size_t best = r->n_other;
        for (size_t i = 0; i < r->n_other; i++) {
            uint64_t b = r->other[i].bytes;
            if (b + (pool >> 8) >= pool && b <= pool + (2ULL << 30) &&
                (best == r->n_other || b < r->other[best].bytes))
                best = i;
        }
        if (best < r->n_other) {
            r->process_bytes = r->other[best].bytes;
            r->have |= OD_HAVE_PROCESS;
            r->self_from_other = 1;
            memmove(&r->other[best], &r->other[best + 1], (r->n_other - best - 1) * sizeof r->other[0]);
            r->n_other--;
        }
    }
    /* Windows/WSL: the driver spills into shared system memory before failing. */
    if ((r->have & OD_HAVE_ALLOCATED) && (r->have & OD_HAVE_CAPACITY) && r->allocated_bytes > r->capacity_bytes)
        r->spill = 1;
}

/* cudaMallocAsync's wording: "Allocation on device 0 would exceed allowed memory. (out of
 * memory)" then "Currently allocated : X", "Requested : X", "Device limit : X", "Free
 * (according to CUDA): X", "PyTorch limit (set by user-supplied memory fraction)" and its
 * figure on the next line (2^64 bytes, unparsable, when no fraction is set). */
static void parse_torch_async(od_oom_report *r, const char *p, const char *end)
{
    parse_device_after(r, p, end, "on device ");
    /* The message spans up to 8 lines (or one, when a log joined them). */
    const char *e = p;
    for (int n = 0; n < 8 && e < end; n++) {
        const char *nl = memchr(e, '\n', (size_t)(end - e));
        e = nl ? nl + 1 : end;
        if (e < end && (*skip_sp(e, end) == '\n' || starts(skip_sp(e, end), end, "Traceback")))
            break;
    }
    static const struct { const char *label; unsigned bit; size_t off; } f[] = {
        {"Currently allocated", OD_HAVE_ALLOCATED, offsetof(od_oom_report, allocated_bytes)},
        {"Requested", OD_HAVE_REQUESTED, offsetof(od_oom_report, requested_bytes)},
        {"Device limit", OD_HAVE_CAPACITY, offsetof(od_oom_report, capacity_bytes)},
        {"Free (according to CUDA)", OD_HAVE_FREE, offsetof(od_oom_report, free_bytes)},
        {"PyTorch limit", OD_HAVE_ALLOWED, offsetof(od_oom_report, allowed_bytes)},
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        const char *k = find(p, e, f[i].label), *c;
        size_tok t;
        if (!k || !(c = find(k + strlen(f[i].label), e, ":")))
            continue;
        const char *v = c + 1;
        while (v < e && isspace((unsigned char)*v))
            v++;
        if (parse_size(v, e, &t))
            set(r, f[i].bit, (uint64_t *)((char *)r + f[i].off), &t);
        else if (f[i].bit == OD_HAVE_ALLOWED && starts(v, e, "17179869184"))
            r->garbage_figure = 1; /* 2^64 bytes: no fraction set, no cap */
    }
}

static void parse_mps(od_oom_report *r, const char *msg, const char *end)
{
    size_tok t;
    uint64_t other = 0;
    int have_other = 0;
    for (const char *p = msg; next_size(p, end, msg, &t); p = t.end) {
        if (ends(msg, t.start, "MPS allocated: "))
            set(r, OD_HAVE_ALLOCATED, &r->allocated_bytes, &t);
        else if (ends(msg, t.start, "other allocations: ")) {
            other = t.bytes;
            have_other = 1;
            r->rounded |= t.rounded;
        } else if (ends(msg, t.start, "max allowed: "))
            set(r, OD_HAVE_ALLOWED, &r->allowed_bytes, &t);
        else if (ends(msg, t.start, "Tried to allocate "))
            set(r, OD_HAVE_REQUESTED, &r->requested_bytes, &t);
    }
    /* What the Metal driver holds for this process: the pool plus other allocations. */
    if (have_other && (r->have & OD_HAVE_ALLOCATED)) {
        r->process_bytes = r->allocated_bytes + other;
        r->have |= OD_HAVE_PROCESS;
    }
}

/* "shape[128,768,64,64] and type float": elements x dtype size, or 0. */
static uint64_t tf_shape_bytes(const char *p, const char *end, const char *hint, const char *hint_end, char *dtype,
                               size_t dtsz, int *from_op)
{
    /* TF 2.x "shape[128,768]", TF 1.x "tensor of shape [4096]" */
    const char *sh = find(p, end, "shape[");
    const char *q = sh ? sh + 6 : NULL;
    if (!sh && (sh = find(p, end, "shape [")))
        q = sh + 7;
    if (!sh)
        return 0;
    unsigned __int128 n = 1;
    for (;;) {
        uint64_t d;
        q = skip_sp(q, end);
        const char *e = parse_uint(q, end, &d);
        if (!e)
            return 0;
        n *= d;
        if (n > (unsigned __int128)(UINT64_MAX / 32))
            return 0;
        q = skip_sp(e, end);
        if (q < end && *q == ',') {
            q++;
            continue;
        }
        if (q < end && *q == ']')
            break;
        return 0;
    }
    const char *ty = find(q, end, "type ");
    *from_op = 0;
    if (ty && ty - q <= 16) {
        ty += 5;
    } else if (hint && (ty = find(hint, hint_end, "T=DT_"))) {
        /* TF 1.x printed no type; the op's node on the next line names its T attribute
         * ("[[Node: ... = SpaceToBatchND[T=DT_FLOAT, ...") */
        ty += 5;
        end = hint_end;
        *from_op = 1;
    } else {
        return 0;
    }
    char low[24];
    size_t l = 0;
    for (const char *te = ty; te < end && l < sizeof low - 1 && (isalnum((unsigned char)*te) || *te == '_'); te++)
        low[l++] = *from_op ? (char)tolower((unsigned char)*te) : *te;
    low[l] = '\0';
    unsigned es = od_tf_dtype_size(low, l);
    if (!es)
        return 0;
    if (l > dtsz - 1)
        l = dtsz - 1;
    memcpy(dtype, low, l);
    dtype[l] = '\0';
    return (uint64_t)(n * es);
}

/* Requested size in a TF/XLA line: exact "(rounded to N)" or "(NB)" beats the rounded
 * figure printed before it. */
static int tf_request(const char *p, const char *end, uint64_t *bytes, int *rounded)
{
    const char *rt = find(p, end, "rounded to ");
    uint64_t v;
    if (rt && parse_uint(rt + 11, end, &v)) {
        *bytes = v;
        *rounded = 0;
        return 1;
    }
    const char *a = find(p, end, "allocat");
    size_tok t;
    if (!a || !next_size(a, end, p, &t))
        return 0;
    const char *q = skip_sp(t.end, end);
    if (q < end && *q == '(' && parse_uint(q + 1, end, &v)) {
        *bytes = v;
        *rounded = 0;
        return 1;
    }
    *bytes = t.bytes;
    *rounded = t.rounded;
    return 1;
}

static int mentions_jax(const char *p, const char *end)
{
    return find(p, end, "jax") || find(p, end, "Jax") || find(p, end, "JAX") ||
           find(p, end, "XlaRuntimeError") || find(p, end, "XLA_PYTHON") || find(p, end, "xla_extension") ||
           find(p, end, "BufferAssignment") || find(p, end, "xla/python/") || find(p, end, "external/xla/");
}

static int mentions_torch_xla(const char *p, const char *end)
{
    return find(p, end, "torch_xla") || find(p, end, "pytorch/xla") || find(p, end, "xla_client/") ||
           find(p, end, "XRTExecute") || find(p, end, "PJRT_DEVICE") || find(p, end, "xm.mark_step") ||
           find(p, end, "xla_device");
}

static void close_bfc(scan *s)
{
    s->open_bfc = NULL;
    s->open_has_exc = 0;
}

static od_oom_report *open_report(scan *s)
{
    return s->open_bfc ? &s->t->reports[s->open_idx] : NULL;
}

/* TensorFlow / XLA lines: the BFC allocator's "ran out of memory" line, its "Stats:"
 * dump, and the exception that follows; one OOM event, however many lines. */
static int scan_tf_line(scan *s, const char *line, const char *le, uint64_t lineno)
{
    const char *bfc = find(line, le, "ran out of memory trying to allocate");
    /* "The caller indicates that this is not a failure": TF retries with less, no OOM. */
    if (bfc && find(line, le, "not a failure"))
        return 1;
    int exc = find(line, le, "OOM when allocating") || find(line, le, "ResourceExhaustedError") ||
              find(line, le, "RESOURCE_EXHAUSTED") || find(line, le, "Resource exhausted:");
    od_oom_report *r = open_report(s);
    if (bfc) {
        r = new_report(s, s->xla_torch_input ? OD_FW_PYTORCH_XLA : s->jax_input ? OD_FW_JAX : OD_FW_TENSORFLOW,
                       line, lineno);
        if (!r)
            return 1;
        r->xla = 1;
        /* TF's pinned host allocator ("cuda_host_bfc", TF 2.x "gpu_host_bfc"): host memory,
         * capped by TF_GPU_HOST_MEM_LIMIT_IN_MB (64 GiB by default), not the GPU's. */
        if (find(line, le, "cuda_host_bfc") || find(line, le, "gpu_host_bfc")) {
            r->framework = OD_FW_HOST;
            r->kind = OD_KIND_HOST_RAM;
            snprintf(r->library, sizeof r->library, "tf-pinned");
        }
        s->open_bfc = r;
        s->open_idx = s->t->n_reports - 1;
        s->open_has_exc = 0;
        uint64_t b;
        int rd;
        if (tf_request(bfc, le, &b, &rd)) {
            r->requested_bytes = b;
            r->rounded = rd;
            r->have |= OD_HAVE_REQUESTED;
        }
        return 1;
    }
    if (exc) {
        char dtype[24] = "";
        int from_op = 0;
        /* the next line: a TF 1.x node, or the figure a word wrap moved there */
        const char *end = s->buf + s->len, *nx = le < end ? le + 1 : end;
        const char *ne = nx < end ? memchr(nx, '\n', (size_t)(end - nx)) : NULL;
        if (!ne)
            ne = end;
        const char *node = skip_sp(nx, ne);
        uint64_t shape_bytes = tf_shape_bytes(line, le, starts(node, ne, "[[Node:") ? node : NULL, ne, dtype,
                                              sizeof dtype, &from_op);
        /* A second exception line joins the open event only to add the tensor shape. */
        if (!r || (s->open_has_exc && !(shape_bytes && !r->dtype[0]))) {
            od_framework fw = s->xla_torch_input ? OD_FW_PYTORCH_XLA
                              : mentions_jax(line, le) || find(line, le, "Failed to allocate request for") ||
                                      (s->jax_input && !find(line, le, "OOM when allocating tensor"))
                                  ? OD_FW_JAX : OD_FW_TENSORFLOW;
            r = new_report(s, fw, line, lineno);
            if (!r)
                return 1;
            s->open_bfc = r;
            s->open_idx = s->t->n_reports - 1;
        }
        if (shape_bytes) {
            memcpy(r->dtype, dtype, sizeof dtype);
            r->dtype_from_op = from_op;
        }
        if (mentions_jax(line, le) && !s->xla_torch_input)
            r->framework = OD_FW_JAX;
        s->open_has_exc = 1;
        if (shape_bytes) {
            /* The tensor's own size: shape x dtype, exact. */
            r->requested_bytes = shape_bytes;
            r->rounded = 0;
            r->have |= OD_HAVE_REQUESTED;
        } else if (!(r->have & OD_HAVE_REQUESTED)) {
            uint64_t b;
            int rd;
            /* "Resource exhausted: Out" / "of memory while trying to allocate N bytes.": a
             * word wrap puts the figure on the next line (jax#788) */
            if (tf_request(line, le, &b, &rd) ||
                (find(nx, ne, "while trying to allocate ") && tf_request(nx, ne, &b, &rd))) {
                r->requested_bytes = b;
                r->rounded = rd;
                r->have |= OD_HAVE_REQUESTED;
            }
        }
        parse_device(r, line, le);
        return 1;
    }
    if (r) {
        /* The BFC "Stats:" dump: "Limit: N", "InUse: N" (plain bytes). */
        const char *k;
        uint64_t v;
        if ((k = find(line, le, "Limit:")) && !find(line, le, "bytes_limit") &&
            parse_uint(skip_sp(k + 6, le), le, &v)) {
            r->capacity_bytes = v;
            r->have |= OD_HAVE_CAPACITY;
        } else if ((k = find(line, le, "InUse:")) && !find(line, le, "MaxInUse:") &&
                   parse_uint(skip_sp(k + 6, le), le, &v)) {
            r->allocated_bytes = v;
            r->have |= OD_HAVE_ALLOCATED;
        } else if ((k = find(line, le, "total allocation:")) && !r->program_bytes) {
            /* XLA's BufferAssignment stats: what the compiled program needs in all */
            size_tok t;
            if (next_size(k + 17, le, line, &t))
                r->program_bytes = t.bytes;
        }
    }
    return 0;
}

/* ---------- libraries, the host, vLLM, XLA, ONNX Runtime ---------- */

/* The framework that printed a CUDA error from its own code, judged by the input. */
static od_framework context_framework(const scan *s, const char *line, const char *le)
{
    if (s->xla_torch_input || mentions_torch_xla(line, le))
        return OD_FW_PYTORCH_XLA;
    if (s->jax_input || mentions_jax(line, le))
        return OD_FW_JAX;
    if (s->tf_input)
        return OD_FW_TENSORFLOW;
    return OD_FW_PYTORCH_CUDA;
}

/* The stream executor's "failed to allocate X (N bytes) from device": N. */
static int se_request(const char *line, const char *le, uint64_t *out)
{
    const char *k = find(line, le, "failed to allocate ");
    const char *q = k ? find(k, le, "(") : NULL;
    const char *e = q ? parse_uint(q + 1, le, out) : NULL;
    return e && starts(skip_sp(e, le), le, "bytes");
}

/* The report made by a recent line (within 3 lines) of the same framework and kind, so a
 * follow-up line ("Failed to CUDA calloc N bytes") adds to it; NULL when none. */
static od_oom_report *recent(scan *s, od_framework fw, od_oom_kind kind, uint64_t lineno)
{
    if (!s->last_lineno || lineno > s->last_lineno + 3 || s->last_idx >= s->t->n_reports)
        return NULL;
    od_oom_report *r = &s->t->reports[s->last_idx];
    return r->framework == fw && r->kind == kind ? r : NULL;
}

static od_oom_report *make(scan *s, od_framework fw, od_oom_kind kind, const char *lib, const char *line,
                           uint64_t lineno)
{
    od_oom_report *r = new_report(s, fw, line, lineno);
    if (!r)
        return NULL;
    r->kind = kind;
    if (lib) {
        size_t n = strlen(lib) < sizeof r->library - 1 ? strlen(lib) : sizeof r->library - 1;
        memcpy(r->library, lib, n);
        r->library[n] = '\0';
    }
    s->last_idx = s->t->n_reports - 1;
    s->last_lineno = lineno;
    return r;
}

/* "N bytes" right after the phrase pat in [line, le): the request. */
static void request_after(od_oom_report *r, const char *line, const char *le, const char *pat)
{
    const char *k = find(line, le, pat);
    size_tok t;
    if (k && next_size(k + strlen(pat), le, line, &t) && t.start <= skip_sp(k + strlen(pat), le) + 1)
        set(r, OD_HAVE_REQUESTED, &r->requested_bytes, &t);
}

/* A line that reports an out-of-memory outside the framework allocators' own OOM message.
 * Returns 1 when it made or extended a report. */
/* The "Requested:", "Free:", "Total:" lines (exact bytes) DeepSpeed prints before "Workspace is
 * null.": the last such triple before line, if any, fills r's request, free and capacity. */
static void deepspeed_figures(scan *s, od_oom_report *r, const char *line)
{
    const char *p = s->buf, *hit = NULL;
    while ((p = find(p, line, "Requested:")) != NULL) {
        if (p == s->buf || p[-1] == '\n')
            hit = p;
        p += 10;
    }
    if (!hit)
        return;
    static const char *const keys[] = {"Requested:", "Free:", "Total:"};
    uint64_t v[3];
    p = hit;
    for (int k = 0; k < 3; k++) {
        const char *le = memchr(p, '\n', (size_t)(line - p));
        if (!le || !starts(p, le, keys[k]))
            return;
        const char *q = parse_uint(skip_sp(p + strlen(keys[k]), le), le, &v[k]);
        if (!q || skip_sp(q, le) != le)
            return;
        p = le + 1;
    }
    r->requested_bytes = v[0];
    r->free_bytes = v[1];
    r->capacity_bytes = v[2];
    r->have |= OD_HAVE_REQUESTED | OD_HAVE_FREE | OD_HAVE_CAPACITY;
}

static int scan_other_line(scan *s, const char *line, const char *le, const char *end, uint64_t lineno)
{
    const char *k;
    od_oom_report *r;
    size_tok t;
    uint64_t v;
    /* NCCL's own status; its calloc line follows the CUDA failure. */
    if (find(line, le, "Cuda failure 'out of memory'")) {
        if (recent(s, OD_FW_NCCL, OD_KIND_LIBRARY, lineno))
            return 1;
        return make(s, OD_FW_NCCL, OD_KIND_LIBRARY, NULL, line, lineno) != NULL;
    }
    if ((k = find(line, le, "Failed to CUDA calloc "))) {
        r = recent(s, OD_FW_NCCL, OD_KIND_LIBRARY, lineno);
        if (!r && !(r = make(s, OD_FW_NCCL, OD_KIND_LIBRARY, NULL, line, lineno)))
            return 1;
        request_after(r, line, le, "Failed to CUDA calloc ");
        s->last_lineno = lineno;
        return 1;
    }
    if ((k = find(line, le, "/dev/shm")) && find(line, le, "NCCL WARN") &&
        (find(line, le, "failed to extend") || find(line, le, "Error while creating shared memory"))) {
        r = recent(s, OD_FW_HOST, OD_KIND_HOST_SHM, lineno);
        if (!r && !(r = make(s, OD_FW_HOST, OD_KIND_HOST_SHM, "nccl", line, lineno)))
            return 1;
        if ((k = find(k, le, " to ")) && next_size(k + 4, le, line, &t))
            set(r, OD_HAVE_REQUESTED, &r->requested_bytes, &t);
        else if ((k = find(line, le, "(size ")) && parse_uint(k + 6, le, &v)) {
            r->requested_bytes = v;
            r->have |= OD_HAVE_REQUESTED;
        }
        s->last_lineno = lineno;
        return 1;
    }
    if (find(line, le, "CUBLAS_STATUS_ALLOC_FAILED") || find(line, le, "CUBLAS_STATUS_NOT_INITIALIZED")) {
        if (recent(s, OD_FW_CUBLAS, OD_KIND_LIBRARY, lineno)) {
            s->last_lineno = lineno;
            return 1;
        }
        return make(s, OD_FW_CUBLAS, OD_KIND_LIBRARY, NULL, line, lineno) != NULL;
    }
    if (find(line, le, "CUDNN_STATUS_ALLOC_FAILED") || find(line, le, "CUDNN_STATUS_NOT_INITIALIZED") ||
        (find(line, le, "cuDNN") && find(line, le, "workspace") && find(line, le, "memory"))) {
        if (recent(s, OD_FW_CUDNN, OD_KIND_LIBRARY, lineno)) {
            s->last_lineno = lineno;
            return 1;
        }
        return make(s, OD_FW_CUDNN, OD_KIND_LIBRARY, NULL, line, lineno) != NULL;
    }
    /* The host. */
    if ((k = find(line, le, "DefaultCPUAllocator:")) || (k = find(line, le, "Unable to allocate ")) ||
        ((k = find(line, le, "MemoryError")) && k == skip_sp(line, le))) {
        if (find(line, le, "Unable to allocate ") && !find(line, le, "for an array"))
            return 0;
        r = make(s, OD_FW_HOST, OD_KIND_HOST_RAM, find(line, le, "DefaultCPUAllocator") ? "pytorch" :
                 find(line, le, "for an array") ? "numpy" : NULL, line, lineno);
        if (!r)
            return 1;
        request_after(r, line, le, "you tried to allocate ");
        request_after(r, line, le, "Unable to allocate ");
        return 1;
    }
    if (find(line, le, "insufficient shared memory") || (find(line, le, "killed by signal: Bus error")) ||
        find(line, le, "out of shared memory")) {
        if (recent(s, OD_FW_HOST, OD_KIND_HOST_SHM, lineno)) {
            s->last_lineno = lineno;
            return 1;
        }
        return make(s, OD_FW_HOST, OD_KIND_HOST_SHM, "shm", line, lineno) != NULL;
    }
    /* The kernel's OOM killer: "Out of memory: Kill process N (name) score ..." then (or on the
     * same line) "Killed process N (name) total-vm:...kB, anon-rss:...kB". */
    if (find(line, le, "Out of memory: Kill") || find(line, le, "out of memory: Kill") ||
        ((k = find(line, le, "Killed process ")) && find(k, le, "anon-rss:"))) {
        r = recent(s, OD_FW_HOST, OD_KIND_HOST_KILLED, lineno);
        if (r && !find(line, le, "Killed process"))
            r = NULL; /* a second "Out of memory: Kill process" is the next event */
        if (r && (r->have & OD_HAVE_PROCESS))
            r = NULL;
        if (!r && !(r = make(s, OD_FW_HOST, OD_KIND_HOST_KILLED, "oom-killer", line, lineno)))
            return 1;
        s->last_lineno = lineno;
        if ((k = find(line, le, "anon-rss:"))) {
            /* dmesg may group digits with commas ("153,700,88kB") */
            uint64_t kb = 0;
            int nd = 0;
            for (k += 9; k < le && (isdigit((unsigned char)*k) || *k == ',') && nd < 16; k++)
                if (*k != ',') {
                    kb = kb * 10 + (uint64_t)(*k - '0');
                    nd++;
                }
            if (nd && starts(k, le, "kB")) {
                r->process_bytes = kb << 10;
                r->have |= OD_HAVE_PROCESS;
            }
        }
        return 1;
    }
    if (find(line, le, "oom-kill event") || find(line, le, "oom_kill event") ||
        (find(line, le, "srun: error:") && find(line, le, "Out Of Memory"))) {
        if (recent(s, OD_FW_HOST, OD_KIND_HOST_KILLED, lineno)) {
            s->last_lineno = lineno;
            return 1;
        }
        return make(s, OD_FW_HOST, OD_KIND_HOST_KILLED, "slurm", line, lineno) != NULL;
    }
    if (find(line, le, "OOMKilled")) {
        if (recent(s, OD_FW_HOST, OD_KIND_HOST_KILLED, lineno)) {
            s->last_lineno = lineno;
            return 1;
        }
        return make(s, OD_FW_HOST, OD_KIND_HOST_KILLED, "kubernetes", line, lineno) != NULL;
    }
    if (find(line, le, "is killed by signal: Killed")) {
        if (recent(s, OD_FW_HOST, OD_KIND_HOST_KILLED, lineno)) {
            s->last_lineno = lineno;
            return 1;
        }
        return make(s, OD_FW_HOST, OD_KIND_HOST_KILLED, "dataloader", line, lineno) != NULL;
    }
    if ((k = find(line, le, "exitcode")) && (k = find(k, le, "-9")) && !isdigit((unsigned char)k[2])) {
        return make(s, OD_FW_HOST, OD_KIND_HOST_KILLED, "torchrun", line, lineno) != NULL;
    }
    if ((k = find(line, le, "return code = -9")) && !isdigit((unsigned char)k[16])) {
        return make(s, OD_FW_HOST, OD_KIND_HOST_KILLED, "deepspeed", line, lineno) != NULL;
    }
    if (find(line, le, "Signal 9 (SIGKILL) received")) {
        if (recent(s, OD_FW_HOST, OD_KIND_HOST_KILLED, lineno))
            return 1;
        return make(s, OD_FW_HOST, OD_KIND_HOST_KILLED, "torchrun", line, lineno) != NULL;
    }
    /* vLLM. */
    if (find(line, le, "No available memory for the cache blocks")) {
        if (recent(s, OD_FW_VLLM, OD_KIND_VLLM_CACHE, lineno)) {
            s->last_lineno = lineno; /* the source line echoed in the traceback, then the error */
            return 1;
        }
        return make(s, OD_FW_VLLM, OD_KIND_VLLM_CACHE, NULL, line, lineno) != NULL;
    }
    /* vLLM V1: "To serve at least one request with the model's max seq len (N), (X GiB KV
     * cache is needed, which is larger than the available KV cache memory (Y GiB). Based on
     * the available memory, the estimated maximum model length is M." */
    if ((k = find(line, le, "max seq len (")) && find(line, le, "KV cache is needed")) {
        r = make(s, OD_FW_VLLM, OD_KIND_VLLM_KV_LEN, NULL, line, lineno);
        if (!r)
            return 1;
        parse_uint(k + 13, le, &r->max_model_len);
        const char *q = find(k, le, "), (");
        if (q && next_size(q + 4, le, line, &t))
            set(r, OD_HAVE_REQUESTED, &r->requested_bytes, &t);
        if ((q = find(k, le, "available KV cache memory (")) && next_size(q + 27, le, line, &t))
            set(r, OD_HAVE_FREE, &r->free_bytes, &t);
        if ((q = find(k, le, "maximum model length is ")))
            parse_uint(q + 24, le, &r->kv_cache_tokens);
        return 1;
    }
    if ((k = find(line, le, "max seq len (")) && find(line, le, "stored in KV cache (")) {
        r = make(s, OD_FW_VLLM, OD_KIND_VLLM_KV_LEN, NULL, line, lineno);
        if (r) {
            parse_uint(k + 13, le, &r->max_model_len);
            const char *c = find(line, le, "stored in KV cache (");
            parse_uint(c + 20, le, &r->kv_cache_tokens);
        }
        return 1;
    }
    if ((k = find(line, le, "Free memory on device")) &&
        (find(line, le, "less than desired GPU memory utilization") || find(line, le, "Desired GPU memory utilization"))) {
        if (!find(line, le, "less than"))
            return 0; /* the informational startup line of a run that passed */
        r = make(s, OD_FW_VLLM, OD_KIND_VLLM_STARTUP, NULL, line, lineno);
        if (!r)
            return 1;
        /* "(19.77/22.05 GiB)": free / total, the unit written once after the total. */
        const char *o = find(k, le, "(");
        const char *sl = o ? find(o, le, "/") : NULL;
        size_tok tot;
        if (sl && next_size(sl + 1, le, line, &tot)) {
            r->capacity_bytes = tot.bytes;
            r->have |= OD_HAVE_CAPACITY;
            r->rounded |= tot.rounded;
            char num[48];
            size_t n = (size_t)(sl - (o + 1));
            size_t ul = (size_t)(tot.end - tot.start);
            const char *u = tot.start;
            while (u < tot.end && (isdigit((unsigned char)*u) || *u == '.'))
                u++;
            u = skip_sp(u, tot.end);
            if (n + (size_t)(tot.end - u) + 2 < sizeof num && ul < sizeof num) {
                memcpy(num, o + 1, n);
                num[n] = ' ';
                memcpy(num + n + 1, u, (size_t)(tot.end - u));
                num[n + 1 + (size_t)(tot.end - u)] = '\0';
                size_tok fr;
                const char *ne = num + strlen(num);
                if (parse_size(skip_sp(num, ne), ne, &fr))
                    set(r, OD_HAVE_FREE, &r->free_bytes, &fr);
            }
        }
        const char *ut = find(line, le, "utilization (");
        size_tok want;
        if (ut && next_size(ut + 13, le, line, &want)) {
            /* the figure after the ratio: utilization x total, as vLLM printed it */
            const char *comma = find(ut, le, ",");
            if (comma && comma < want.start)
                set(r, OD_HAVE_REQUESTED, &r->requested_bytes, &want);
        }
        return 1;
    }
    /* XLA at compile time: "Ran out of memory in memory space hbm. Used 21.95G of 15.48G hbm." */
    if ((k = find(line, le, "Ran out of memory in memory space")) && (k = find(k, le, "Used "))) {
        od_framework fw = s->xla_torch_input || mentions_torch_xla(line, le) ? OD_FW_PYTORCH_XLA
                          : s->jax_input || mentions_jax(line, le)           ? OD_FW_JAX
                                                                             : OD_FW_TENSORFLOW;
        r = make(s, fw, OD_KIND_XLA_COMPILE, NULL, line, lineno);
        size_tok used, lim;
        const char *of;
        if (r && parse_xla_size(k + 5, le, &used) && (of = find(used.end, le, " of ")) &&
            parse_xla_size(of + 4, le, &lim)) {
            set(r, OD_HAVE_REQUESTED, &r->requested_bytes, &used);
            set(r, OD_HAVE_CAPACITY, &r->capacity_bytes, &lim);
        }
        return 1;
    }
    /* PyTorch/XLA on TPU: "Attempting to reserve 6.48G at the bottom of memory. That was not
     * possible. There are 6.78G free, 0B reserved, and 3.33G reservable." */
    if ((k = find(line, le, "Attempting to reserve ")) && find(line, le, " free")) {
        od_framework fw = s->jax_input && !s->xla_torch_input ? OD_FW_JAX : OD_FW_PYTORCH_XLA;
        od_oom_report tmp;
        memset(&tmp, 0, sizeof tmp);
        size_tok want, fr;
        const char *th = find(k, le, "There are ");
        if (!parse_xla_size(k + 22, le, &want) || !th || !parse_xla_size(th + 10, le, &fr))
            return 0;
        /* the same event is logged several times: fold into the last one */
        if (s->last_lineno && s->last_idx < s->t->n_reports) {
            od_oom_report *p = &s->t->reports[s->last_idx];
            if (p->kind == OD_KIND_XLA_RESERVE && p->requested_bytes == want.bytes && p->free_bytes == fr.bytes) {
                s->last_lineno = lineno;
                return 1;
            }
        }
        r = make(s, fw, OD_KIND_XLA_RESERVE, NULL, line, lineno);
        if (r) {
            set(r, OD_HAVE_REQUESTED, &r->requested_bytes, &want);
            set(r, OD_HAVE_FREE, &r->free_bytes, &fr);
        }
        return 1;
    }
    /* ONNX Runtime's BFC arena. */
    if ((k = find(line, le, "Failed to allocate memory for requested buffer of size "))) {
        r = make(s, OD_FW_ONNXRUNTIME, OD_KIND_ALLOCATOR, NULL, line, lineno);
        if (r && parse_uint(k + 55, le, &v)) {
            r->requested_bytes = v;
            r->have |= OD_HAVE_REQUESTED;
        }
        return 1;
    }
    if ((k = find(line, le, "Available memory of ")) && find(line, le, "is smaller than requested bytes of ")) {
        r = make(s, OD_FW_ONNXRUNTIME, OD_KIND_ALLOCATOR, NULL, line, lineno);
        const char *q = find(line, le, "is smaller than requested bytes of ");
        if (r && parse_uint(k + 20, le, &v)) {
            r->free_bytes = v;
            r->have |= OD_HAVE_FREE;
        }
        if (r && parse_uint(q + 35, le, &v)) {
            r->requested_bytes = v;
            r->have |= OD_HAVE_REQUESTED;
        }
        return 1;
    }
    /* A CUDA (or HIP: TF's rocm_driver.cc) driver error printed by a framework's own code;
     * early HIP numbered out-of-memory 1002. */
    if (find(line, le, "CUDA_ERROR_OUT_OF_MEMORY") || find(line, le, "cudaErrorMemoryAllocation") ||
        find(line, le, "HIP_ERROR_OutOfMemory") || find(line, le, "hipErrorOutOfMemory") ||
        (find(line, le, "hipError_t(1002)") && find(line, le, "failed to allocate"))) {
        od_framework fw = find(line, le, "onnxruntime") ? OD_FW_ONNXRUNTIME : context_framework(s, line, le);
        /* "failed to allocate X (N bytes) from device" is the stream executor's (TF, XLA). */
        if (fw == OD_FW_PYTORCH_CUDA && find(line, le, "from device"))
            fw = OD_FW_TENSORFLOW;
        od_oom_kind kind = OD_KIND_DRIVER;
        if (find(line, le, " on host")) {
            fw = OD_FW_HOST; /* pinned host memory: "failed to alloc N bytes on host" */
            kind = OD_KIND_HOST_RAM;
        }
        r = recent(s, fw, kind, lineno);
        if (r) {
            /* TF retries with smaller sizes: one event. BFCAllocator::Extend backs off by
             * 10% per failure (kBackpedalFactor 0.9); the same size again is a repeat. */
            s->last_lineno = lineno;
            uint64_t b;
            if (kind != OD_KIND_HOST_RAM && (r->have & OD_HAVE_REQUESTED) && se_request(line, le, &b)) {
                if (b == r->backoff_last_bytes)
                    r->occurrences++;
                else if (b < r->backoff_last_bytes && b >= r->backoff_last_bytes / 10 * 8)
                    r->backoff_steps++;
                r->backoff_last_bytes = b;
            }
            return 1;
        }
        r = make(s, fw, kind, kind == OD_KIND_HOST_RAM ? "pinned" : NULL, line, lineno);
        if (r && kind == OD_KIND_HOST_RAM && (k = find(line, le, "failed to alloc ")) && parse_uint(k + 16, le, &v)) {
            r->requested_bytes = v;
            r->have |= OD_HAVE_REQUESTED;
        } else if (r && se_request(line, le, &v)) {
            r->requested_bytes = r->backoff_last_bytes = v;
            r->have |= OD_HAVE_REQUESTED;
        } else if (r && (k = find(line, le, "failed to allocate ")) && next_size(k + 19, le, line, &t)) {
            set(r, OD_HAVE_REQUESTED, &r->requested_bytes, &t);
            r->backoff_last_bytes = r->requested_bytes;
        }
        return 1;
    }
    /* DeepSpeed's inference kernels: "Workspace can't be allocated, not enough memory" (older
     * builds: "no enough memory") when the free memory holds fewer tokens than the minimum,
     * and "Workspace is null." when cudaMalloc failed, printed after "Requested:\t<bytes>",
     * "Free:\t<bytes>", "Total:\t<bytes>" lines. */
    if (find(line, le, "Workspace can't be allocated") || find(line, le, "Workspace is null")) {
        if (recent(s, OD_FW_DEEPSPEED, OD_KIND_LIBRARY, lineno)) {
            s->last_lineno = lineno;
            return 1;
        }
        r = make(s, OD_FW_DEEPSPEED, OD_KIND_LIBRARY, NULL, line, lineno);
        if (r)
            deepspeed_figures(s, r, line);
        return 1;
    }
    /* Caffe / MXNet: "Check failed: error == cudaSuccess (2 vs. 0)  out of memory". */
    if (find(line, le, "== cudaSuccess") && find(line, le, "Check failed") && find(line, le, "out of memory"))
        return make(s, OD_FW_OTHER, OD_KIND_DRIVER, find(line, le, "mxnet") ? "mxnet" : "caffe", line, lineno) != NULL;
    if (find(line, le, "cudaMalloc retry failed: out of memory"))
        return make(s, OD_FW_OTHER, OD_KIND_DRIVER, "mxnet", line, lineno) != NULL;
    /* ONNX Runtime's CUDA provider, CNTK: "CUDA failure 2: out of memory". */
    if (find(line, le, "CUDA failure 2: out of memory")) {
        od_framework fw = s->onnx_input ? OD_FW_ONNXRUNTIME : OD_FW_OTHER;
        if (recent(s, fw, OD_KIND_DRIVER, lineno)) {
            s->last_lineno = lineno;
            return 1;
        }
        return make(s, fw, OD_KIND_DRIVER, NULL, line, lineno) != NULL;
    }
    /* PyTorch's cuDNN frontend, most often for want of workspace memory. */
    if (find(line, le, "Unable to find a valid cuDNN algorithm")) {
        if (recent(s, OD_FW_PYTORCH_CUDA, OD_KIND_LIBRARY, lineno)) {
            s->last_lineno = lineno;
            return 1;
        }
        return make(s, OD_FW_PYTORCH_CUDA, OD_KIND_LIBRARY, "cudnn", line, lineno) != NULL;
    }
    /* PyTorch's cudaMallocAsync backend. */
    if (find(line, le, "would exceed allowed memory") && find(line, le, "out of memory")) {
        r = make(s, OD_FW_PYTORCH_CUDA, OD_KIND_ALLOCATOR, "cudaMallocAsync", line, lineno);
        if (r)
            parse_torch_async(r, line, end);
        return 1;
    }
    return 0;
}

static od_mem_summary *new_summary(scan *s)
{
    int ok;
    GROW(s->t->summaries, s->t->n_summaries, s->cap_summaries, ok);
    if (!ok) {
        s->nomem = 1;
        return NULL;
    }
    od_mem_summary *m = &s->t->summaries[s->t->n_summaries++];
    memset(m, 0, sizeof *m);
    return m;
}

/* The first size cell of a memory_summary row ("| Allocated memory | 1507 MiB | ..."),
 * and the second (peak). */
static void summary_row(const char *line, const char *le, uint64_t *cur, uint64_t *peak)
{
    const char *c = memchr(line + 1, '|', (size_t)(le - line - 1));
    size_tok t;
    if (!c || !next_size(c, le, line, &t))
        return;
    *cur = t.bytes;
    if (next_size(t.end, le, line, &t))
        *peak = t.bytes;
}

/* Lines after "PyTorch CUDA memory summary, device ID N" up to the table's end. Rows keep
 * the header line's own prefix: the table's '|' at the header's column ("# |" in a source
 * comment, "name  | |" from docker compose, "[rank0]: |"). A table printed as one string's
 * repr or JSON ("|...|\n|...|" with a backslash-n between rows) is read within its line. */
static const char *scan_summary(scan *s, const char *line, const char *end, uint64_t *lineno)
{
    od_mem_summary *m = new_summary(s);
    if (!m)
        return NULL;
    m->offset = (uint64_t)(line - s->buf);
    m->line = *lineno;
    const char *hle = memchr(line, '\n', (size_t)(end - line));
    hle = hle ? hle : end;
    const char *h = find(line, hle, "device ID ");
    uint64_t d = 0;
    if (h)
        parse_uint(h + 10, hle, &d);
    m->device = d < 4096 ? (int)d : -1;
    const char *bar = NULL; /* the table's '|' on the header line */
    for (const char *c = line; h && c < h; c++)
        if (*c == '|')
            bar = c;
    size_t col = bar ? (size_t)(bar - line) : SIZE_MAX;
    const char *esc = h ? find(h, hle, "\\n|") : NULL;
    int lit = esc != NULL;
    const char *rows_end = lit ? hle : end;
    const char *p = lit ? esc + 2 : (hle < end ? hle + 1 : end);
    const char *last = p;
    for (int n = 0; p < rows_end && n < 120; n++) {
        const char *le = lit ? find(p, rows_end, "\\n") : memchr(p, '\n', (size_t)(rows_end - p));
        if (!le)
            le = rows_end;
        const char *q = !lit && (size_t)(le - p) > col && p[col] == '|' ? p + col : skip_sp(p, le);
        if (q >= le || *q != '|')
            break;
        if (!lit)
            (*lineno)++;
        const char *k;
        uint64_t v;
        if ((k = find(q, le, "CUDA OOMs:")) && parse_uint(skip_sp(k + 10, le), le, &v)) {
            m->ooms = v;
            m->have_counts = 1;
        }
        if ((k = find(q, le, "cudaMalloc retries:")) && parse_uint(skip_sp(k + 19, le), le, &v))
            m->retries = v;
        const char *lab = skip_sp(q + 1, le);
        if (starts(lab, le, "Allocated memory "))
            summary_row(q, le, &m->allocated_bytes, &m->allocated_peak_bytes);
        else if (starts(lab, le, "GPU reserved memory "))
            summary_row(q, le, &m->reserved_bytes, &m->reserved_peak_bytes);
        else if (starts(lab, le, "Non-releasable memory ")) {
            uint64_t pk = 0;
            summary_row(q, le, &m->non_releasable_bytes, &pk);
            m->have_non_releasable = 1;
        }
        p = le < rows_end ? le + (lit ? 2 : 1) : rows_end;
        last = p;
    }
    return lit ? (hle < end ? hle + 1 : end) : last;
}

/* ---------- nvidia-smi ---------- */

static od_smi_gpu *new_gpu(scan *s)
{
    int ok;
    GROW(s->t->gpus, s->t->n_gpus, s->cap_gpus, ok);
    if (!ok) {
        s->nomem = 1;
        return NULL;
    }
    od_smi_gpu *g = &s->t->gpus[s->t->n_gpus++];
    memset(g, 0, sizeof *g);
    g->index = (int)s->t->n_gpus - 1;
    return g;
}

static od_smi_process *new_proc(scan *s)
{
    int ok;
    GROW(s->t->procs, s->t->n_procs, s->cap_procs, ok);
    if (!ok) {
        s->nomem = 1;
        return NULL;
    }
    od_smi_process *p = &s->t->procs[s->t->n_procs++];
    memset(p, 0, sizeof *p);
    return p;
}

static void copy_trim(char *dst, size_t dsz, const char *p, const char *e)
{
    while (p < e && isspace((unsigned char)*p))
        p++;
    while (e > p && isspace((unsigned char)e[-1]))
        e--;
    size_t n = (size_t)(e - p) < dsz - 1 ? (size_t)(e - p) : dsz - 1;
    memcpy(dst, p, n);
    dst[n] = '\0';
}

/* Default table: "|   0  NVIDIA H200   On  |   00000000:00:06.0 Off |" then
 * "| N/A 39C P0 80W / 700W |  0MiB / 143771MiB | ...". */
static int scan_smi_table(scan *s, const char *prev, const char *prev_end, const char *line,
                          const char *le)
{
    const char *sl = find(line, le, "MiB /");
    if (!sl || *skip_sp(line, le) != '|')
        return 0;
    const char *c1 = memchr(line + 1, '|', (size_t)(le - line - 1));
    if (!c1 || c1 > sl)
        return 0;
    size_tok used, total;
    const char *u = sl;
    while (u > c1 + 1 && isdigit((unsigned char)u[-1]))
        u--;
    if (!parse_size(u, le, &used) || !next_size(used.end, le, line, &total))
        return 0;
    od_smi_gpu *g = new_gpu(s);
    if (!g)
        return 1;
    g->used_bytes = used.bytes;
    g->total_bytes = total.bytes;
    s->t->smi_format = "table";
    if (prev && *skip_sp(prev, prev_end) == '|') {
        const char *q = skip_sp(skip_sp(prev, prev_end) + 1, prev_end);
        uint64_t idx;
        const char *e = parse_uint(q, prev_end, &idx);
        if (e && idx < 4096) {
            g->index = (int)idx;
            const char *ne = memchr(e, '|', (size_t)(prev_end - e));
            if (!ne)
                ne = prev_end;
            /* The name ends where the Persistence-M column ("On"/"Off") starts. */
            const char *pm = ne;
            while (pm > e && isspace((unsigned char)pm[-1]))
                pm--;
            while (pm > e && !isspace((unsigned char)pm[-1]))
                pm--;
            copy_trim(g->name, sizeof g->name, e, pm);
            if (ne < prev_end) {
                const char *b = skip_sp(ne + 1, prev_end), *be = b;
                while (be < prev_end && !isspace((unsigned char)*be) && *be != '|')
                    be++;
                copy_trim(g->bus_id, sizeof g->bus_id, b, be);
            }
        }
    }
    return 1;
}

/* Process table row: "|    0   N/A  N/A    12345      C   python     1234MiB |". */
static void scan_smi_proc(scan *s, const char *line, const char *le)
{
    const char *tok[32], *tend[32];
    int n = 0;
    const char *p = skip_sp(line, le);
    if (p >= le || *p != '|')
        return;
    p++;
    while (p < le && n < 32) {
        p = skip_sp(p, le);
        if (p >= le || *p == '|')
            break;
        tok[n] = p;
        while (p < le && !isspace((unsigned char)*p) && *p != '|')
            p++;
        tend[n++] = p;
    }
    if (n < 4)
        return;
    uint64_t gpu, pid;
    size_tok mem;
    if (parse_uint(tok[0], tend[0], &gpu) != tend[0] || !parse_size(tok[n - 1], tend[n - 1], &mem))
        return;
    for (int k = 1; k + 2 < n; k++) {
        size_t tl = (size_t)(tend[k + 1] - tok[k + 1]);
        int type = (tl == 1 && (*tok[k + 1] == 'C' || *tok[k + 1] == 'G' || *tok[k + 1] == 'M')) ||
                   (tl == 3 && (!memcmp(tok[k + 1], "C+G", 3) || !memcmp(tok[k + 1], "M+C", 3)));
        if (type && parse_uint(tok[k], tend[k], &pid) == tend[k]) {
            od_smi_process *pr = new_proc(s);
            if (!pr)
                return;
            pr->gpu = gpu < 4096 ? (int)gpu : -1;
            pr->pid = pid;
            pr->bytes = mem.bytes;
            if (!s->t->smi_format)
                s->t->smi_format = "table"; /* the default output's process list, pasted alone */
            if (k + 2 <= n - 2)
                copy_trim(pr->name, sizeof pr->name, tok[k + 2], tend[n - 2]);
            return;
        }
    }
}

/* nvidia-smi -q [-d MEMORY]: "GPU 00000000:00:06.0", then "FB Memory Usage" with
 * "Total : N MiB", "Reserved", "Used", "Free" lines. */
static const char *scan_smi_query(scan *s, const char *line, const char *le, const char *end,
                                  uint64_t *lineno)
{
    od_smi_gpu *g = NULL;
    /* The GPU header is the nearest "GPU xxxx:" line above. */
    const char *p = line;
    const char *gl = NULL, *gle = NULL;
    for (const char *q = line; q > s->buf;) {
        const char *ps = q - 1;
        while (ps > s->buf && ps[-1] != '\n')
            ps--;
        const char *t = skip_sp(ps, q - 1);
        if (starts(t, q - 1, "GPU ") && !find(t, q - 1, " : ")) {
            gl = t + 4;
            gle = q - 1;
            break;
        }
        if (starts(t, q - 1, "FB Memory Usage") && ps != line)
            break;
        q = ps;
        if (line - q > 4096)
            break;
    }
    g = new_gpu(s);
    if (!g)
        return NULL;
    s->t->smi_format = "query";
    if (gl)
        copy_trim(g->bus_id, sizeof g->bus_id, gl, gle);
    p = le < end ? le + 1 : end;
    for (int n = 0; p < end && n < 8; n++) {
        const char *e = memchr(p, '\n', (size_t)(end - p));
        if (!e)
            e = end;
        const char *k = skip_sp(p, e);
        const char *colon = find(k, e, ":");
        size_tok t;
        if (!colon || !next_size(colon, e, k, &t))
            break;
        (*lineno)++;
        if (starts(k, e, "Total"))
            g->total_bytes = t.bytes;
        else if (starts(k, e, "Reserved")) {
            g->reserved_bytes = t.bytes;
            g->have_reserved = 1;
        } else if (starts(k, e, "Used"))
            g->used_bytes = t.bytes;
        else if (starts(k, e, "Free")) {
            g->free_bytes = t.bytes;
            g->have_free = 1;
        }
        p = e < end ? e + 1 : end;
    }
    return p;
}

/* --query-gpu=...,memory.total,... --format=csv: a header naming the columns, then one
 * line per GPU. Units come from the header ("[MiB]") when values are bare numbers. */
static const char *scan_smi_csv(scan *s, const char *line, const char *le, const char *end,
                                uint64_t *lineno)
{
    enum { C_INDEX, C_NAME, C_BUS, C_TOTAL, C_USED, C_FREE, C_RESERVED, C_OTHER };
    int col[32];
    uint64_t mult[32];
    int ncol = 0;
    const char *p = line;
    while (p <= le && ncol < 32) {
        const char *e = memchr(p, ',', (size_t)(le - p));
        if (!e)
            e = le;
        char name[64];
        copy_trim(name, sizeof name, p, e);
        int c = C_OTHER;
        if (!strncmp(name, "index", 5)) c = C_INDEX;
        else if (!strncmp(name, "name", 4)) c = C_NAME;
        else if (!strncmp(name, "pci.bus_id", 10)) c = C_BUS;
        else if (!strncmp(name, "memory.total", 12)) c = C_TOTAL;
        else if (!strncmp(name, "memory.used", 11)) c = C_USED;
        else if (!strncmp(name, "memory.free", 11)) c = C_FREE;
        else if (!strncmp(name, "memory.reserved", 15)) c = C_RESERVED;
        mult[ncol] = strstr(name, "[GiB]") ? 1ULL << 30 : strstr(name, "[KiB]") ? 1ULL << 10 : 1ULL << 20;
        col[ncol++] = c;
        p = e + 1;
    }
    p = le < end ? le + 1 : end;
    while (p < end) {
        const char *e = memchr(p, '\n', (size_t)(end - p));
        if (!e)
            e = end;
        if (!find(p, e, ","))
            break;
        od_smi_gpu *g = new_gpu(s);
        if (!g)
            return NULL;
        s->t->smi_format = "csv";
        (*lineno)++;
        const char *f = p;
        for (int i = 0; i < ncol && f <= e; i++) {
            const char *fe = memchr(f, ',', (size_t)(e - f));
            if (!fe)
                fe = e;
            const char *v = skip_sp(f, fe);
            size_tok t;
            uint64_t u = 0;
            int have = 0;
            if (parse_size(v, fe, &t)) {
                u = t.bytes;
                have = 1;
            } else if (parse_uint(v, fe, &u)) {
                u *= mult[i];
                have = 1;
            }
            switch (col[i]) {
            case C_INDEX: if (have) { uint64_t x; if (parse_uint(v, fe, &x) && x < 4096) g->index = (int)x; } break;
            case C_NAME: copy_trim(g->name, sizeof g->name, f, fe); break;
            case C_BUS: copy_trim(g->bus_id, sizeof g->bus_id, f, fe); break;
            case C_TOTAL: g->total_bytes = u; break;
            case C_USED: g->used_bytes = u; break;
            case C_FREE: g->free_bytes = u; g->have_free = have; break;
            case C_RESERVED: g->reserved_bytes = u; g->have_reserved = have; break;
            default: break;
            }
            f = fe + 1;
        }
        p = e < end ? e + 1 : end;
    }
    return p;
}

/* ---------- memory_stats JSON ---------- */

/* A figure: a non-negative JSON number that fits 64 bits. */
static int u64_of(const json_t *v, uint64_t *out)
{
    if (json_is_integer(v) && json_integer_value(v) >= 0) {
        *out = (uint64_t)json_integer_value(v);
        return 1;
    }
    if (json_is_real(v) && json_real_value(v) >= 0 && json_real_value(v) < 1.8e19) {
        *out = (uint64_t)json_real_value(v);
        return 1;
    }
    return 0;
}

static int get_u64(json_t *o, const char *key, uint64_t *out)
{
    return u64_of(json_object_get(o, key), out);
}

/* The keys PyTorch's memory_stats figures are read from (torch.cuda.memory_stats), each
 * into its field of od_mem_stats; JAX's are profile.c's (od_jax_stats_set). */
static const struct { const char *k; unsigned bit; size_t at; } stats_keys[] = {
    {"allocated_bytes.all.current", OD_MS_ALLOCATED, offsetof(od_mem_stats, allocated_bytes)},
    {"allocated_bytes.all.peak", OD_MS_ALLOCATED_PEAK, offsetof(od_mem_stats, allocated_peak_bytes)},
    {"reserved_bytes.all.current", OD_MS_RESERVED, offsetof(od_mem_stats, reserved_bytes)},
    {"reserved_bytes.all.peak", OD_MS_RESERVED_PEAK, offsetof(od_mem_stats, reserved_peak_bytes)},
    {"inactive_split_bytes.all.current", OD_MS_INACTIVE, offsetof(od_mem_stats, inactive_split_bytes)},
    {"num_ooms", OD_MS_OOMS, offsetof(od_mem_stats, ooms)},
    {"num_alloc_retries", OD_MS_RETRIES, offsetof(od_mem_stats, retries)},
};
#define N_STATS_KEYS (sizeof stats_keys / sizeof stats_keys[0])

/* Whether stats_from reads key. */
static int is_stats_key(const char *key)
{
    for (size_t i = 0; i < N_STATS_KEYS; i++)
        if (key[0] == stats_keys[i].k[0] && !strcmp(key, stats_keys[i].k))
            return 1;
    od_profile_stats scratch;
    return od_jax_stats_set(&scratch, key, 0);
}

/* JAX's figures in od_mem_stats' terms: in use is allocated, the pool is reserved. */
static void jax_into(const od_profile_stats *j, od_mem_stats *m)
{
#define TAKE(has, field, bit, value)  \
    if (j->has) {                      \
        m->field = j->value;           \
        m->have |= (bit);              \
    }
    TAKE(has_bytes_in_use, allocated_bytes, OD_MS_ALLOCATED, bytes_in_use)
    TAKE(has_peak_bytes_in_use, allocated_peak_bytes, OD_MS_ALLOCATED_PEAK, peak_bytes_in_use)
    TAKE(has_pool_bytes, reserved_bytes, OD_MS_RESERVED, pool_bytes)
    TAKE(has_peak_pool_bytes, reserved_peak_bytes, OD_MS_RESERVED_PEAK, peak_pool_bytes)
    TAKE(has_bytes_limit, limit_bytes, OD_MS_LIMIT, bytes_limit)
    TAKE(has_largest_free_block_bytes, largest_free_block_bytes, OD_MS_LARGEST_FREE, largest_free_block_bytes)
#undef TAKE
}

/* Fill *m from the memory_stats dict o; returns whether o is one (PyTorch: allocated or
 * reserved; JAX: bytes in use, and a limit or a peak). */
static int stats_from(json_t *o, od_mem_stats *m)
{
    memset(m, 0, sizeof *m);
    for (size_t i = 0; i < N_STATS_KEYS; i++)
        if (get_u64(o, stats_keys[i].k, (uint64_t *)((char *)m + stats_keys[i].at)))
            m->have |= stats_keys[i].bit;
    if (m->have & (OD_MS_ALLOCATED | OD_MS_RESERVED))
        return 1;
    memset(m, 0, sizeof *m);
    m->jax = 1;
    od_profile_stats j;
    memset(&j, 0, sizeof j);
    const char *k;
    json_t *v;
    uint64_t x;
    json_object_foreach(o, k, v) {
        if (u64_of(v, &x))
            od_jax_stats_set(&j, k, x);
    }
    jax_into(&j, m);
    return (m->have & OD_MS_ALLOCATED) && (m->have & (OD_MS_LIMIT | OD_MS_ALLOCATED_PEAK));
}

/* The input's memory_stats: text[0..len) (the whole input, NULs and CRs made spaces, not
 * unwrapped; NULL: none) when it is one JSON dump, else py (NULL: none), the last dict
 * printed by Python that repr_line read in the text. */
static void scan_stats(scan *s, const char *text, size_t len, const od_mem_stats *py)
{
    const char *p = text;
    json_t *root = NULL;
    od_mem_stats m;
    int found = 0;
    while (text && p < text + len && isspace((unsigned char)*p))
        p++;
    if (text && p < text + len && *p == '{') {
        json_error_t je;
        root = json_loadb(text, len, JSON_DECODE_ANY, &je);
        found = json_is_object(root) && stats_from(root, &m);
    }
    if (!found && json_is_object(root)) {
        /* One level down: {"memory_stats": {...}} or {"cuda:0": {...}}. */
        const char *k;
        json_t *v;
        json_object_foreach(root, k, v) {
            if (json_is_object(v) && stats_from(v, &m)) {
                found = 1;
                break;
            }
        }
    }
    json_decref(root);
    if (!found && py) {
        m = *py;
        found = 1;
    }
    if (!found)
        return;
    s->t->stats = malloc(sizeof *s->t->stats);
    if (!s->t->stats) {
        s->nomem = 1;
        return;
    }
    *s->t->stats = m;
}

/* ---------- memory_stats() as Python prints it ----------
 * print(torch.cuda.memory_stats()) gives "OrderedDict([('key', value), ...])" on Python
 * <= 3.11, "OrderedDict({'key': value, ...})" on 3.12+, and "{'key': value, ...}" for a
 * dict(); pprint puts one entry per line. The literal is read a line at a time, in the
 * same way by the whole-text scan and the stream (which so needs none of its lines kept),
 * into a JSON object that stats_from reads as it reads a JSON dump. Strings and figures
 * never span a line break (Python never breaks them); an entry counts once the token
 * after its value closes it, so a paste cut short loses its last figure rather than reading
 * part of it. */

#define REPR_KEY_MAX 96        /* longer than any memory_stats key */
#define REPR_PREFIX_MAX 64     /* a log prefix repeated on every line ("[rank0]: ") */
#define REPR_MAX_ENTRIES 4096  /* torch 2.x prints about 120 */

enum {
    R_IDLE,       /* outside a literal: looking for one */
    R_INNER,      /* after "OrderedDict(": '[', '{' or ')' */
    R_ITEM,       /* a key (dict) or '(' (list); or the close */
    R_KEY,        /* list form: the key after '(' */
    R_SEP,        /* ':' (dict) or ',' (list) */
    R_VALUE,
    R_TUPLE_END,  /* list form: ')' after the value */
    R_NEXT,       /* ',' or the close */
    R_OUTER       /* ')' closing "OrderedDict(" */
};

typedef struct {
    int expect;             /* R_* */
    int list;               /* OrderedDict([(k, v), ...]) */
    int wrapped;            /* inside OrderedDict(...) */
    json_t *obj;            /* the entries read so far that stats_from reads; NULL: none yet */
    size_t entries;
    char key[REPR_KEY_MAX];
    int key_ok;             /* the key fit in key[] */
    int want;               /* and stats_from reads it: its value is kept */
    json_t *value;          /* the entry's value, until what closes the entry */
    char prefix[REPR_PREFIX_MAX];
    size_t prefix_len;      /* 0: continuation lines carry no prefix */
    int found;              /* m holds the last memory_stats literal read */
    od_mem_stats m;
    int nomem;
} repr_reader;

static void repr_drop(repr_reader *r)
{
    json_decref(r->obj);
    json_decref(r->value);
    r->obj = r->value = NULL;
    r->entries = 0;
    r->expect = R_IDLE;
}

/* The literal ends (closed, or cut short by what is not Python): keep its figures when it
 * is a memory_stats dict. */
static void repr_close(repr_reader *r, int complete)
{
    od_mem_stats m;
    if (r->obj && stats_from(r->obj, &m)) {
        m.cut_short = !complete;
        r->m = m;
        r->found = 1;
    }
    repr_drop(r);
}

/* The entry's value is closed by the token after it. */
static void repr_commit(repr_reader *r)
{
    if (r->want && r->value && !r->obj && !(r->obj = json_object()))
        r->nomem = 1;
    else if (r->want && r->value && json_object_set_nocheck(r->obj, r->key, r->value) != 0)
        r->nomem = 1;
    json_decref(r->value);
    r->value = NULL;
    r->entries++;
}

static int ident_char(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '.';
}

/* A string literal at p (quote ' or "), within the line: its text (an escaped character
 * taken as itself: memory_stats keys have none) into out[0..cap), NUL-terminated; *fit: 0
 * when it did not fit. Returns its end, or NULL when the line ends first. */
static const char *repr_string(const char *p, const char *end, char *out, size_t cap, int *fit)
{
    char q = *p++;
    size_t n = 0;
    *fit = 1;
    while (p < end && *p != q) {
        if (*p == '\\' && p + 1 < end)
            p++;
        if (n + 1 < cap)
            out[n++] = *p;
        else
            *fit = 0;
        p++;
    }
    if (p >= end)
        return NULL;
    out[n] = '\0';
    return p + 1;
}

/* A scalar value at p: an int, a float, None/True/False (JSON's null/true/false too), nan,
 * inf, a string. Sets r->value (NULL: no memory; null unless r->want and a number). Returns
 * its end, or NULL when none is there. */
static const char *repr_value(repr_reader *r, const char *p, const char *end)
{
    static const char *const words[] = {"None", "null", "nan", "inf", "-inf", "True", "true", "False", "false"};
    if (*p == '\'' || *p == '"') {
        char s[8];
        int fit;
        const char *e = repr_string(p, end, s, sizeof s, &fit);
        if (e)
            r->value = json_null(); /* no figure */
        return e;
    }
    const char *s = p;
    if (p + 1 < end && *p == '-' && isdigit((unsigned char)p[1]))
        p++;
    if (isdigit((unsigned char)*p)) {
        int real = 0;
        while (p < end && isdigit((unsigned char)*p))
            p++;
        if (p < end && *p == '.') {
            real = 1;
            for (p++; p < end && isdigit((unsigned char)*p);)
                p++;
        }
        if (p < end && (*p == 'e' || *p == 'E')) {
            real = 1;
            p++;
            if (p < end && (*p == '+' || *p == '-'))
                p++;
            if (p >= end || !isdigit((unsigned char)*p))
                return NULL;
            while (p < end && isdigit((unsigned char)*p))
                p++;
        }
        if (p < end && ident_char(*p))
            return NULL;
        char num[64];
        uint64_t u;
        const char *digits = s + (*s == '-');
        if (!r->want || (size_t)(p - s) >= sizeof num) {
            r->value = json_null(); /* not kept, or longer than any figure memory_stats holds */
        } else if (!real) {
            /* beyond int64 (a Python int has no limit): not read, rather than read wrong */
            if (parse_uint(digits, p, &u) == p && u <= (uint64_t)INT64_MAX)
                r->value = json_integer(*s == '-' ? -(json_int_t)u : (json_int_t)u);
            else
                r->value = json_null();
        } else {
            memcpy(num, s, (size_t)(p - s));
            num[p - s] = '\0';
            r->value = json_real(strtod(num, NULL));
            if (!r->value) /* json_real refuses what is not finite */
                r->value = json_null();
        }
        return p;
    }
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        size_t l = strlen(words[i]);
        if (starts(s, end, words[i]) && (s + l == end || !ident_char(s[l]))) {
            r->value = words[i][0] == 'T' || words[i][0] == 't' ? json_true()
                       : words[i][0] == 'F' || words[i][0] == 'f' ? json_false()
                                                                  : json_null();
            return s + l;
        }
    }
    return NULL;
}

/* An entry's key at p: a string. Returns its end, or NULL when none is there. */
static const char *repr_key(repr_reader *r, const char *p, const char *end)
{
    const char *e = NULL;
    if ((*p == '\'' || *p == '"') && (e = repr_string(p, end, r->key, sizeof r->key, &r->key_ok)) != NULL) {
        r->expect = R_SEP;
        r->want = r->key_ok && is_stats_key(r->key);
    }
    return e;
}

/* Where a literal may open in [p, end): "OrderedDict(", or '{' before a quoted key. Sets
 * what the reader expects next and returns the end of the opening; NULL: none. */
static const char *repr_open(repr_reader *r, const char *line, const char *p, const char *end)
{
    for (; p < end; p++) {
        const char *b = memchr(p, '{', (size_t)(end - p)), *od = find(p, b ? b : end, "OrderedDict(");
        if (!(p = od ? od : b))
            return NULL;
        const char *o = p, *e = NULL;
        if (p == od && (p == line || !ident_char(p[-1]))) {
            e = p + strlen("OrderedDict(");
            r->expect = R_INNER;
            r->wrapped = 1;
        } else if (*p == '{') {
            const char *k = skip_sp(p + 1, end);
            if (k < end && (*k == '\'' || *k == '"')) {
                e = p + 1;
                r->expect = R_ITEM;
                r->wrapped = 0;
                r->list = 0;
            }
        }
        if (!e)
            continue;
        /* the text before the literal, when it is more than indentation, may open its
         * continuation lines too */
        const char *pe = o;
        while (pe > line && (pe[-1] == ' ' || pe[-1] == '\t'))
            pe--;
        r->prefix_len = pe > line && (size_t)(pe - line) < sizeof r->prefix ? (size_t)(pe - line) : 0;
        memcpy(r->prefix, line, r->prefix_len);
        return e;
    }
    return NULL;
}

/* Read one line (normalized, without its '\n') into the literal being read, or look for
 * one. Every literal the line opens is read in turn. */
static void repr_line(repr_reader *r, const char *line, size_t n)
{
    const char *p = line, *end = line + n;
    if (r->expect != R_IDLE && r->prefix_len && n >= r->prefix_len && memcmp(p, r->prefix, r->prefix_len) == 0)
        p += r->prefix_len;
    while (!r->nomem) {
        if (r->expect == R_IDLE && !(p = repr_open(r, line, p, end)))
            return;
        p = skip_sp(p, end);
        if (p >= end)
            return; /* the literal goes on on the next line */
        const char *next = NULL;
        char c = *p;
        switch (r->expect) {
        case R_INNER:
            if (c == '[' || c == '{') {
                r->list = c == '[';
                r->expect = R_ITEM;
                next = p + 1;
            } else if (c == ')') {
                repr_close(r, 1);
                next = p + 1;
            }
            break;
        case R_ITEM:
            if (r->list && c == '(') {
                r->expect = R_KEY;
                next = p + 1;
                break;
            }
            if (c == (r->list ? ']' : '}')) {
                r->expect = r->wrapped ? R_OUTER : R_IDLE;
                if (!r->wrapped)
                    repr_close(r, 1);
                next = p + 1;
            } else if (!r->list) {
                next = repr_key(r, p, end);
            }
            break;
        case R_KEY:
            next = repr_key(r, p, end);
            break;
        case R_SEP:
            if (c == (r->list ? ',' : ':')) {
                r->expect = R_VALUE;
                next = p + 1;
            }
            break;
        case R_VALUE:
            if ((next = repr_value(r, p, end)) != NULL)
                r->expect = r->list ? R_TUPLE_END : R_NEXT;
            if (next && !r->value)
                r->nomem = 1;
            break;
        case R_TUPLE_END:
            if (c == ')') {
                repr_commit(r);
                r->expect = R_NEXT;
                next = p + 1;
            }
            break;
        case R_NEXT:
            if (c == ',' || c == (r->list ? ']' : '}')) {
                if (!r->list)
                    repr_commit(r);
                next = p + 1;
                if (c != ',') {
                    r->expect = r->wrapped ? R_OUTER : R_IDLE;
                    if (!r->wrapped)
                        repr_close(r, 1);
                } else if (r->entries >= REPR_MAX_ENTRIES) {
                    repr_close(r, 0);
                } else {
                    r->expect = R_ITEM;
                }
            }
            break;
        case R_OUTER:
            if (c == ')') {
                repr_close(r, 1);
                next = p + 1;
            }
            break;
        }
        if (!next) {
            /* not Python: the literal was cut short here; this may open another */
            repr_close(r, 0);
            next = p;
        }
        p = next;
    }
}

/* The end of the input: a literal still open was cut short. */
static void repr_end(repr_reader *r)
{
    if (r->expect != R_IDLE)
        repr_close(r, 0);
}

/* ---------- driver ---------- */

/* Does a PyTorch message end within [p, e)? Each wording has a last phrase. */
/* ---------- lines a logger wrapped mid-word ----------
 * A logger or terminal that wraps at a fixed column splits words ("from devic\ne:") and
 * figures ("10.0\n5 GiB"). unwrap() rejoins a break that is unambiguous: the two halves
 * make one word of the OOM wordings below (and are not two such words), or a figure
 * printed with two decimals followed by its unit. The rest of the next line moves up to
 * the end of the broken one; the bytes this frees at its end become markers (WRAP_LINE for
 * the line break, WRAP_NONE for indentation), so every offset and every later line keeps
 * its place and the scanner counts the folded line. Only LF breaks are rejoined. */
#define WRAP_LINE '\x01'
#define WRAP_NONE '\x02'

static const char *const wrap_words[] = {
    "device", "allocate", "allocated", "unallocated", "allocating", "allocation", "capacity", "capacty",
    "memory", "reserved", "PyTorch", "non-PyTorch", "process", "Process", "Including", "already", "cached",
    "available", "documentation", "Management", "fragmentation", "expandable_segments", "max_split_size_mb",
    "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF", "PYTORCH_HIP_ALLOC_CONF", "CUDA_ERROR_OUT_OF_MEMORY",
    "OutOfMemoryError", "RESOURCE_EXHAUSTED", "ResourceExhaustedError", "private", "allowed", "tensor",
    "failed", "total", "which", "Tried",
};

static int is_wrap_mark(char c)
{
    return c == WRAP_LINE || c == WRAP_NONE;
}

/* Where phrase begins on the line [line, le): whole on it, or broken at one of its spaces
 * by a word-wrap, its first words ending the line (before the text that follows, up to
 * end); NULL if nowhere. */
static const char *find_wrapped(const char *line, const char *le, const char *end, const char *phrase)
{
    const char *a = find(line, le, phrase);
    if (a || le >= end)
        return a;
    size_t n = strlen(phrase);
    for (const char *p = (size_t)(le - line) > n ? le - n : line; p < le; p++)
        if (*p == phrase[0] && od_torch_phrase_at(p, end, phrase))
            return p;
    return NULL;
}

static int word_char(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '-';
}

/* Is [p, p+n) one of wrap_words? */
static int wrap_word(const char *p, size_t n)
{
    for (size_t i = 0; i < sizeof wrap_words / sizeof wrap_words[0]; i++)
        if (strlen(wrap_words[i]) == n && memcmp(wrap_words[i], p, n) == 0)
            return 1;
    return 0;
}

/* Does the break between buf[..t) and buf[h..e) split one word or one two-decimal figure? */
static int wrap_splits(const char *buf, size_t t, size_t h, size_t e)
{
    size_t a = t, b = h;
    while (a > 0 && word_char(buf[a - 1]))
        a--;
    while (b < e && word_char(buf[b]))
        b++;
    size_t n1 = t - a, n2 = b - h;
    if (n1 && n2 && n1 + n2 <= 32 && !isdigit((unsigned char)buf[a]) && !isdigit((unsigned char)buf[h])) {
        char w[32];
        memcpy(w, buf + a, n1);
        memcpy(w + n1, buf + h, n2);
        return wrap_word(w, n1 + n2) && !(wrap_word(buf + a, n1) && wrap_word(buf + h, n2));
    }
    /* A figure: "12.4" + "0 GiB", "12." + "40 GiB", "12" + ".40 GiB" (always two decimals). */
    a = t;
    while (a > 0 && (isdigit((unsigned char)buf[a - 1]) || buf[a - 1] == '.'))
        a--;
    b = h;
    while (b < e && (isdigit((unsigned char)buf[b]) || buf[b] == '.'))
        b++;
    if (a == t || b == h || !isdigit((unsigned char)buf[a]))
        return 0;
    char num[40];
    if (t - a + b - h >= sizeof num)
        return 0;
    size_t n = 0, dots = 0, dec = 0;
    for (size_t i = a; i < t; i++)
        num[n++] = buf[i];
    for (size_t i = h; i < b; i++)
        num[n++] = buf[i];
    for (size_t i = 0; i < n; i++) {
        if (num[i] == '.')
            dots++;
        else if (dots)
            dec++;
    }
    if (dots != 1 || dec != 2 || num[n - 1] == '.')
        return 0;
    const char *u = buf + b;
    return b < e && *u == ' ' &&
           (starts(u + 1, buf + e, "GiB") || starts(u + 1, buf + e, "MiB") || starts(u + 1, buf + e, "KiB") ||
            starts(u + 1, buf + e, "TiB") || starts(u + 1, buf + e, "GB") || starts(u + 1, buf + e, "MB"));
}

/* Rejoin the wrapped lines of buf[0..len) in place (see above). Markers only ever end a
 * line this loop joined, so their counts are carried rather than re-read: a chain of k
 * joins costs O(k), not O(k^2). */
static void unwrap(char *buf, size_t len)
{
    size_t i = 0, last_e = SIZE_MAX, last_k = 0, last_lines = 0, last_none = 0;
    while (i < len) {
        char *nl = memchr(buf + i, '\n', len - i);
        if (!nl)
            return;
        size_t n = (size_t)(nl - buf);
        int chained = n == last_e;
        size_t t = chained ? last_k : n;
        size_t h = n + 1;
        while (h < len && (buf[h] == ' ' || buf[h] == '\t'))
            h++;
        char *nl2 = h < len ? memchr(buf + h, '\n', len - h) : NULL;
        size_t e = nl2 ? (size_t)(nl2 - buf) : len;
        int figure = t > 0 && (isdigit((unsigned char)buf[t - 1]) || buf[t - 1] == '.');
        if (t == 0 || h >= e || (figure && h != n + 1) || !wrap_splits(buf, t, h, e)) {
            i = n + 1;
            continue;
        }
        size_t lines = (chained ? last_lines : 0) + 1, none = (chained ? last_none : 0) + (h - (n + 1));
        memmove(buf + t, buf + h, e - h);
        size_t k = t + (e - h);
        memset(buf + k, WRAP_LINE, lines);
        memset(buf + k + lines, WRAP_NONE, none);
        assert(k + lines + none == e);
        last_e = e;
        last_k = k;
        last_lines = lines;
        last_none = none;
        i = e; /* the joined line may be wrapped again */
    }
}

/* Loggers and terminals wrap long messages: when the anchor line does not finish the
 * message, join up to OD_TORCH_MESSAGE_LINES - 1 following lines (indentation collapsed
 * to one space) into buf. Returns the end of the joined text, or NULL when the line is complete by itself. */
static const char *join_message(const char *a, const char *le, const char *end, char *buf, size_t size)
{
    const char *p = memchr(le, '\n', (size_t)(end - le)); /* le may stop short of unwrap's markers */
    p = p ? p + 1 : end;
    if (od_torch_message_complete(a, le, p, end) || le >= end)
        return NULL;
    size_t n = (size_t)(le - a) < size - 1 ? (size_t)(le - a) : size - 1;
    memcpy(buf, a, n);
    /* Every anchor phrase ends "out of memory": without it, a word-wrap broke the phrase
     * and the next line holds its rest, not another report. */
    const char *broken = find(a, le, "out of memory") ? NULL : p;
    for (int k = 0; k < OD_TORCH_MESSAGE_LINES - 1 && p < end && n + 2 < size; k++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *e = nl ? nl : end;
        while (e > p && is_wrap_mark(e[-1]))
            e--;
        const char *q = skip_sp(p, e);
        if (q == e || starts(q, e, "Traceback") || starts(q, e, "File \"") || (find(q, e, "out of memory") && p != broken))
            break;
        buf[n++] = ' ';
        size_t l = (size_t)(e - q) < size - 1 - n ? (size_t)(e - q) : size - 1 - n;
        memcpy(buf + n, q, l);
        n += l;
        p = nl ? nl + 1 : end;
        if (od_torch_message_complete(buf, buf + n, p, end))
            break;
    }
    buf[n] = '\0';
    return buf + n;
}

/* The releases whose wording the PyTorch message at a (on the line that starts at line)
 * is in: read by od_torch_infer_message from this line on, with the bytes unwrap() left
 * where it rejoined a wrapped line taken out, so that it reads the text as it was logged,
 * rejoined. Only a message torchver dates by its own opening phrase on this line is
 * dated (a driver error's "CUDA error: out of memory" is not, nor borrows the next
 * message's date). */
static void date_message(od_oom_report *r, const char *a, const char *line, const char *end)
{
    if (!od_torch_phrase_at(a, end, "CUDA out of memory") && !od_torch_phrase_at(a, end, "HIP out of memory"))
        return;
    char text[16384];
    size_t n = 0;
    int lines = 0; /* the message's lines, as many as od_torch_infer_message reads */
    for (const char *p = line; p < end && n < sizeof text && lines < OD_TORCH_MESSAGE_LINES; p++)
        if (!is_wrap_mark(*p))
            lines += (text[n++] = *p) == '\n';
    r->have_torch_range = od_torch_infer_message(text, n, &r->torch_range);
}

/* Is the stranded (non-releasable, inactive split) memory most of the cache held but not
 * allocated? Then the OOMs counted beside it were fragmentation. */
static int stranded_like(uint64_t stranded, uint64_t reserved_unalloc)
{
    return reserved_unalloc > 0 && (unsigned __int128)stranded * 4 >= (unsigned __int128)reserved_unalloc * 3;
}

/* Is the OOM phrase at a inside a sentence about OOMs ("If you encounter CUDA out of memory,
 * try ...") rather than the error itself? */
static int advice_prose(const char *line, const char *a, const char *le)
{
    const char *e = a;
    while (e < le && *e != ',' && *e != '.' && *e != ':' && *e != '(')
        e++;
    if (e < le && *e == ',' && !find(a, e, "Tried"))
        return 1;
    static const char *const verbs[] = {"encounter ", "avoid ", "prevent ", "If you get ", "to fix "};
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
        if (ends(line, a, verbs[i]))
            return 1;
    return 0;
}

/* Does an nvidia-smi process row hold enough to crowd a job out? A desktop's X server and
 * compositor hold tens of MiB (86 MiB and 12 MiB in a real table), a bare CUDA context about
 * 300 MiB: rows under 256 MiB are not the other processes an OOM is blamed on. */
#define SMI_PROCESS_MIN_BYTES (256ULL << 20)

static int smi_holds(const od_smi_process *p)
{
    return p->bytes >= SMI_PROCESS_MIN_BYTES;
}

/* A driver report without figures takes its evidence from the nvidia-smi process table
 * in the same text: the processes holding memory on its GPU (when it names none, on the GPU
 * with the most of them). Fills r->smi_processes and r->smi_processes_bytes. */
static void smi_evidence(const od_triage *t, od_oom_report *r)
{
    r->smi_processes = 0;
    r->smi_processes_bytes = 0;
    if (r->kind != OD_KIND_DRIVER || (r->have & OD_HAVE_REQUESTED))
        return;
    for (size_t i = 0; i < t->n_procs; i++) {
        const od_smi_process *p = &t->procs[i];
        if (!smi_holds(p) || ((r->have & OD_HAVE_DEVICE) && p->gpu != r->device))
            continue;
        unsigned n = 0;
        uint64_t bytes = 0;
        int seen = 0;
        for (size_t j = 0; j < t->n_procs && !seen; j++)
            seen = j < i && t->procs[j].gpu == p->gpu && smi_holds(&t->procs[j]); /* counted with an earlier row */
        if (seen)
            continue;
        for (size_t j = i; j < t->n_procs; j++)
            if (t->procs[j].gpu == p->gpu && smi_holds(&t->procs[j])) {
                n++;
                bytes += t->procs[j].bytes;
            }
        if (n > r->smi_processes) {
            r->smi_processes = n;
            r->smi_processes_bytes = bytes;
        }
    }
}

static int same_report(const od_oom_report *a, const od_oom_report *b)
{
    if (a->framework != b->framework || a->kind != b->kind || a->have != b->have || a->n_other != b->n_other ||
        strcmp(a->library, b->library) != 0 || a->max_model_len != b->max_model_len ||
        a->kv_cache_tokens != b->kv_cache_tokens)
        return 0;
    if (a->requested_bytes != b->requested_bytes || a->capacity_bytes != b->capacity_bytes ||
        a->free_bytes != b->free_bytes || a->allowed_bytes != b->allowed_bytes ||
        a->allocated_bytes != b->allocated_bytes ||
        a->reserved_unallocated_bytes != b->reserved_unallocated_bytes ||
        a->process_bytes != b->process_bytes)
        return 0;
    for (size_t i = 0; i < a->n_other; i++)
        if (a->other[i].pid != b->other[i].pid || a->other[i].bytes != b->other[i].bytes)
            return 0;
    return 1;
}

/* What the whole input mentions, which decides a report's framework wherever it is. */
typedef struct {
    int jax, xla_torch, tf, onnx;
    const char *ctx_lib; /* "vllm", "deepspeed" or NULL */
} input_flags;

static void flags_of(const char *buf, const char *end, input_flags *f)
{
    f->jax = find(buf, end, "jax") || find(buf, end, "JAX") || find(buf, end, "gpu_hlo_schedule") ||
             find(buf, end, "XLA_PYTHON") || find(buf, end, "XlaRuntimeError") || find(buf, end, "xla_extension") ||
             find(buf, end, "BufferAssignment") || find(buf, end, "xla/python/") || find(buf, end, "external/xla/");
    f->xla_torch = mentions_torch_xla(buf, end);
    f->ctx_lib = find(buf, end, "vllm") || find(buf, end, "vLLM") ? "vllm"
                 : find(buf, end, "deepspeed") || find(buf, end, "DeepSpeed") ? "deepspeed"
                 : NULL;
    f->tf = find(buf, end, "tensorflow") || find(buf, end, "TensorFlow") || find(buf, end, "keras");
    f->onnx = find(buf, end, "onnxruntime") != NULL;
}

/* Make buf[0..len) one scannable text: NULs and CRs would cut lines short, and unwrap's
 * markers are its own. */
static void normalize(char *buf, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (buf[i] == '\0' || buf[i] == '\r' || is_wrap_mark(buf[i]))
            buf[i] = ' ';
}

/* Scan buf[0..len) (normalized, NUL-terminated; rewritten in place by unwrap) for
 * everything, with the input's flags fl, its memory_stats text and the memory_stats dict
 * Python printed in it (see scan_stats). Fills a new result into *out; fails only with
 * OD_ERR_NOMEM. */
static od_status scan_text(char *buf, size_t len, const input_flags *fl, const char *stats_text, size_t stats_len,
                           const od_mem_stats *py_stats, od_triage **out, od_error *err)
{
    *out = NULL;
    od_triage *t = calloc(1, sizeof *t);
    if (!t)
        return od_fail(err, OD_ERR_NOMEM, "out of memory reading %zu bytes", len);
    scan s = {.buf = buf, .len = len, .t = t};
    const char *end = buf + len;
    s.jax_input = fl->jax;
    s.xla_torch_input = fl->xla_torch;
    s.tf_input = fl->tf;
    s.onnx_input = fl->onnx;
    const char *ctx_lib = fl->ctx_lib;

    scan_stats(&s, stats_text, stats_len, py_stats);
    unwrap(buf, len);

    const char *line = buf, *prev = NULL, *prev_end = NULL;
    uint64_t lineno = 1;
    int in_procs = 0;
    while (line < end && !s.nomem) {
        const char *le = memchr(line, '\n', (size_t)(end - line));
        if (!le)
            le = end;
        const char *next = le < end ? le + 1 : end;
        uint64_t folded = 0; /* lines unwrap() joined onto this one */
        while (le > line && is_wrap_mark(le[-1])) {
            folded += le[-1] == WRAP_LINE;
            le--;
        }
        const char *a;
        od_framework fw = OD_FW_PYTORCH_CUDA;
        if (((a = find_wrapped(line, le, end, "CUDA out of memory")) ||
             (a = find_wrapped(line, le, end, "CUDA error: out of memory")) ||
             ((a = find_wrapped(line, le, end, "HIP out of memory")) && (fw = OD_FW_PYTORCH_ROCM)) ||
             ((a = find_wrapped(line, le, end, "MPS backend out of memory")) && (fw = OD_FW_PYTORCH_MPS))) &&
            !advice_prose(line, a, le)) {
            close_bfc(&s);
            od_oom_report *r = new_report(&s, fw, line, lineno);
            if (!r)
                break;
            char joined[2048];
            const char *jend = join_message(a, le, end, joined, sizeof joined);
            const char *msg = jend ? joined : a, *msg_end = jend ? jend : le;
            if (fw == OD_FW_PYTORCH_MPS) {
                parse_mps(r, msg, msg_end);
            } else {
                parse_torch(&s, r, msg, msg_end);
                date_message(r, a, line, end);
            }
            od_triage_classify(r);
            if (t->n_reports > 1 && same_report(r, &t->reports[t->n_reports - 2])) {
                free(r->other);
                t->n_reports--;
                t->reports[t->n_reports - 1].occurrences++;
            }
        } else if (scan_other_line(&s, line, le, end, lineno)) {
            close_bfc(&s);
        } else if (scan_tf_line(&s, line, le, lineno)) {
            /* handled */
        } else if (find(line, le, "PyTorch CUDA memory summary, device ID ")) {
            const char *after = scan_summary(&s, line, end, &lineno);
            if (!after)
                break;
            prev = NULL;
            line = after;
            lineno++;
            continue;
        } else if (find(line, le, "FB Memory Usage")) {
            const char *after = scan_smi_query(&s, line, le, end, &lineno);
            if (!after)
                break;
            line = after;
            lineno++;
            continue;
        } else if (find(line, le, "memory.total") && find(line, le, ",")) {
            const char *after = scan_smi_csv(&s, line, le, end, &lineno);
            if (!after)
                break;
            line = after;
            lineno++;
            continue;
        } else if (find(line, le, "Processes:")) {
            in_procs = 1;
        } else if (in_procs) {
            scan_smi_proc(&s, line, le);
        } else {
            scan_smi_table(&s, prev, prev_end, line, le);
        }
        prev = line;
        prev_end = le;
        line = next;
        lineno += 1 + folded;
    }
    for (size_t i = 0; i < t->n_summaries; i++) {
        od_mem_summary *m = &t->summaries[i];
        uint64_t ru = m->reserved_bytes > m->allocated_bytes ? m->reserved_bytes - m->allocated_bytes : 0;
        m->verdict = m->have_counts && m->ooms > 0 && m->have_non_releasable && stranded_like(m->non_releasable_bytes, ru)
                         ? OD_OOM_FRAGMENTATION : OD_OOM_UNKNOWN;
    }
    if (t->stats) {
        od_mem_stats *m = t->stats;
        unsigned need = OD_MS_ALLOCATED | OD_MS_RESERVED | OD_MS_INACTIVE | OD_MS_OOMS;
        m->verdict = (m->have & need) == need && m->ooms > 0 && m->reserved_bytes > m->allocated_bytes &&
                             stranded_like(m->inactive_split_bytes, m->reserved_bytes - m->allocated_bytes)
                         ? OD_OOM_FRAGMENTATION : OD_OOM_UNKNOWN;
    }
    t->smi_verdict = OD_OOM_UNKNOWN;
    for (size_t i = 0; i < t->n_procs; i++)
        for (size_t j = i + 1; j < t->n_procs; j++)
            if (t->procs[i].gpu == t->procs[j].gpu && t->procs[i].pid != t->procs[j].pid && smi_holds(&t->procs[i]) &&
                smi_holds(&t->procs[j]))
                t->smi_verdict = OD_OOM_OTHER_PROCESSES;
    for (size_t i = 0; i < t->n_reports; i++)
        smi_evidence(t, &t->reports[i]);
    /* TF/XLA reports gather their figures over several lines: classify at the end, and
     * fold repeats (TF prints the same exception more than once). */
    size_t w = 0;
    for (size_t i = 0; i < t->n_reports; i++) {
        od_oom_report *r = &t->reports[i];
        /* A framework OOM printed inside vLLM or DeepSpeed: the framework is PyTorch's, the
         * engine is the context. */
        if (ctx_lib && !r->library[0] && (r->kind == OD_KIND_ALLOCATOR || r->kind == OD_KIND_DRIVER) &&
            (r->framework == OD_FW_PYTORCH_CUDA || r->framework == OD_FW_PYTORCH_ROCM))
            memcpy(r->library, ctx_lib, strlen(ctx_lib) + 1);
        od_triage_classify(r);
        if (w > 0 && same_report(r, &t->reports[w - 1])) {
            t->reports[w - 1].occurrences += r->occurrences;
            free(r->other);
            continue;
        }
        t->reports[w++] = *r;
    }
    t->n_reports = w;
    if (s.nomem) {
        od_triage_free(t);
        return od_fail(err, OD_ERR_NOMEM, "out of memory while scanning");
    }
    *out = t;
    return OD_OK;
}

od_status od_triage_parse_whole(const char *text, size_t len, od_triage **out, od_error *err)
{
    *out = NULL;
    char *buf = malloc(len + 1);
    if (!buf)
        return od_fail(err, OD_ERR_NOMEM, "out of memory reading %zu bytes", len);
    if (len)
        memcpy(buf, text, len);
    buf[len] = '\0';
    normalize(buf, len);
    input_flags fl;
    flags_of(buf, buf + len, &fl);
    repr_reader rr = {0};
    for (const char *p = buf, *e; p <= buf + len; p = e + 1) {
        e = memchr(p, '\n', (size_t)(buf + len - p));
        if (!e)
            e = buf + len;
        repr_line(&rr, p, (size_t)(e - p));
    }
    repr_end(&rr);
    od_status st = rr.nomem ? od_fail(err, OD_ERR_NOMEM, "out of memory reading %zu bytes", len)
                            : scan_text(buf, len, &fl, buf, len, rr.found ? &rr.m : NULL, out, err);
    free(buf);
    return st;
}

void od_triage_free(od_triage *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n_reports; i++)
        free(t->reports[i].other);
    free(t->reports);
    free(t->summaries);
    free(t->stats);
    free(t->gpus);
    free(t->procs);
    free(t);
}

/* ---------- the stream ----------
 * A log is read a line at a time and only the lines the scan can use are kept: every line
 * holding one of the phrases the scanner acts on (anchors below), BEFORE_LINES lines (and
 * at least BEFORE_BYTES) before it, AFTER_LINES after it (the most any multi-line reading
 * looks ahead: a memory_summary() table is 120 rows), the rows of nvidia-smi's process
 * table and CSV, and the text of a memory_stats() dump. Kept lines are joined in order,
 * an empty line where lines were left out (every multi-line reading stops at one), and
 * scanned as a whole text would be, with the flags the whole input set; offsets and line
 * numbers are mapped back. So the result is the whole-text scan's, for the memory of the
 * lines that matter. */

#define BEFORE_LINES 8
#define BEFORE_BYTES 8192     /* nvidia-smi -q: the GPU header is looked for 4 KiB back */
#define BEFORE_MAX_BYTES (1u << 20)
#define AFTER_LINES 128
#define STATS_MAX_BYTES (16u << 20) /* a memory_stats() dump is a few KiB */
#define JOIN_BYTES 96         /* longer than any anchor: unwrap may rejoin one split by a line break */

/* What the scanner acts on: a line without one of these (or a flag phrase) cannot start
 * or extend anything, and the lines around those that have one are kept anyway. The
 * per-branch phrases of scan_other_line, scan_tf_line, the summary and nvidia-smi readers,
 * and DeepSpeed's figures; superset is fine, a missing one is a test failure. */
static const char *const anchors[] = {
    "CUDA out of memory", "CUDA error: out of memory", "HIP out of memory", "MPS backend out of memory",
    "out of memory", "Out of memory", "Out Of Memory", "OutOfMemory", "OUT_OF_MEMORY", "of memory: Kill",
    "Cuda failure", "CUDA calloc", "CUDA failure", "/dev/shm", "CUBLAS_STATUS_", "CUDNN_STATUS_", "cuDNN",
    "DefaultCPUAllocator", "Unable to allocate ", "MemoryError", "shared memory", "killed by signal",
    "Killed process ", "oom-kill event", "oom_kill event", "OOMKilled", "-9", "SIGKILL",
    "No available memory", "KV cache", "Free memory on device", "Ran out of memory",
    "Attempting to reserve ", "Failed to allocate", "failed to alloc", "Available memory of ",
    "CUDA_ERROR_OUT_OF_MEMORY", "cudaErrorMemoryAllocation", "Workspace", "cudaSuccess",
    "HIP_ERROR_OutOfMemory", "hipErrorOutOfMemory", "hipError_t(1002)", "total allocation:", "[[Node:",
    "while trying to allocate ",
    "cudaMalloc retry failed", "ran out of memory", "OOM when allocating", "ResourceExhaustedError",
    "RESOURCE_EXHAUSTED", "Resource exhausted:", "Limit:", "InUse:", "PyTorch CUDA memory summary",
    "FB Memory Usage", "memory.total", "Processes:", "MiB /", "Requested:", "would exceed allowed memory",
};

/* The flag phrases, in input_flags order (flags_of's and mentions_torch_xla's). */
enum { F_JAX, F_XLA_TORCH, F_VLLM, F_DEEPSPEED, F_TF, F_ONNX, F_COUNT };
static const struct { const char *needle; int flag; } flag_phrases[] = {
    {"jax", F_JAX}, {"JAX", F_JAX}, {"gpu_hlo_schedule", F_JAX}, {"XLA_PYTHON", F_JAX},
    {"XlaRuntimeError", F_JAX}, {"xla_extension", F_JAX}, {"BufferAssignment", F_JAX},
    {"xla/python/", F_JAX}, {"external/xla/", F_JAX},
    {"torch_xla", F_XLA_TORCH}, {"pytorch/xla", F_XLA_TORCH}, {"xla_client/", F_XLA_TORCH},
    {"XRTExecute", F_XLA_TORCH}, {"PJRT_DEVICE", F_XLA_TORCH}, {"xm.mark_step", F_XLA_TORCH},
    {"xla_device", F_XLA_TORCH},
    {"vllm", F_VLLM}, {"vLLM", F_VLLM}, {"deepspeed", F_DEEPSPEED}, {"DeepSpeed", F_DEEPSPEED},
    {"tensorflow", F_TF}, {"TensorFlow", F_TF}, {"keras", F_TF}, {"onnxruntime", F_ONNX},
};

#define N_ANCHORS (sizeof anchors / sizeof anchors[0])
#define N_FLAG_PHRASES (sizeof flag_phrases / sizeof flag_phrases[0])

/* Phrases by their first two bytes, so that a line is matched against all of them in one
 * pass: bigram -> first phrase index + 1 in the order below, chained by next[]. */
typedef struct {
    uint16_t head[65536];
    uint16_t next[N_ANCHORS + N_FLAG_PHRASES];
    size_t longest;          /* the longest anchor's length */
} phrase_index;

static const char *phrase(size_t i)
{
    return i < N_ANCHORS ? anchors[i] : flag_phrases[i - N_ANCHORS].needle;
}

static unsigned bigram(const char *p)
{
    return (unsigned)(unsigned char)p[0] << 8 | (unsigned char)p[1];
}

static void index_phrases(phrase_index *ix)
{
    memset(ix->head, 0, sizeof ix->head);
    ix->longest = 0;
    for (size_t i = N_ANCHORS + N_FLAG_PHRASES; i-- > 0;) {
        const char *ph = phrase(i);
        if (i < N_ANCHORS && strlen(ph) > ix->longest)
            ix->longest = strlen(ph);
        assert(strlen(ph) >= 2 && strlen(ph) < JOIN_BYTES);
        unsigned b = bigram(ph);
        ix->next[i] = ix->head[b];
        ix->head[b] = (uint16_t)(i + 1);
    }
}

typedef struct {
    uint64_t comp_off, comp_line; /* where a run of consecutive kept lines starts in the kept text */
    uint64_t orig_off, orig_line; /* and in the input */
} segment;

typedef struct {
    size_t at, len;      /* bytes in the ring buffer */
    uint64_t off, line;  /* in the input */
    int newline;         /* the line ended with '\n' */
} ring_line;

struct od_triage_stream {
    od_lines lines;
    phrase_index ix;
    int flags[F_COUNT];
    char *norm;                 /* the current line, normalized */
    size_t norm_cap;
    char tail[JOIN_BYTES];      /* the previous line's last bytes, for phrases unwrap would rejoin */
    size_t tail_len;
    uint64_t lineno;            /* lines read */
    /* lines before the next anchor, oldest first */
    char *ring;
    size_t ring_start, ring_len, ring_cap;
    ring_line *rl;
    size_t rl_start, rl_n, rl_cap;
    size_t ring_bytes;          /* bytes of the lines in rl, a line break each included */
    unsigned after_left;        /* lines still to keep after the last anchor */
    int in_procs, in_smi_csv;
    /* what is kept */
    char *kept;
    size_t kept_len, kept_cap;
    uint64_t kept_lines;        /* line breaks in kept */
    segment *segs;
    size_t n_segs, cap_segs;
    uint64_t last_line;         /* input line number of the last kept line; 0: none yet */
    /* a memory_stats() dump: the whole text while it may be one */
    char *stats;
    size_t stats_len, stats_cap;
    int stats_state;            /* 0: only white space so far, 1: starts with '{', -1: not one */
    repr_reader repr;           /* a memory_stats dict printed by Python, read as it comes */
    od_status st;
    od_error err;
};

/* What match_phrases found. */
enum { M_ANCHOR = 1, M_PROCESSES = 2, M_SMI_CSV = 4 };

/* The phrases found in p[0..n): sets the input's flags (when set_flags), returns M_* bits. */
static unsigned match_phrases(od_triage_stream *ts, const char *p, size_t n, int set_flags)
{
    unsigned found = 0;
    for (size_t i = 0; i + 1 < n; i++) {
        unsigned h = ts->ix.head[bigram(p + i)];
        for (; h; h = ts->ix.next[h - 1]) {
            size_t k = h - 1;
            const char *ph = phrase(k);
            size_t l = strlen(ph);
            if (l > n - i || memcmp(p + i, ph, l) != 0)
                continue;
            if (k >= N_ANCHORS) {
                if (set_flags)
                    ts->flags[flag_phrases[k - N_ANCHORS].flag] = 1;
                continue;
            }
            found |= M_ANCHOR;
            if (!strcmp(ph, "Processes:"))
                found |= M_PROCESSES;
            else if (!strcmp(ph, "memory.total"))
                found |= M_SMI_CSV;
        }
    }
    return found;
}

/* Could unwrap() rejoin these two lines into one word (see wrap_splits)? a: the first
 * line's last byte, b: the second's first after its indentation. */
static int may_join(char a, char b)
{
    return word_char(a) && word_char(b) && !isdigit((unsigned char)b);
}

/* Does the previous line's tail, a space when spaced, and p[0..n) hold an anchor across the
 * break? (One within either side was found on its own line: only the longest anchor's length
 * less one on each side is read, for every line.) */
static int tail_joins(od_triage_stream *ts, const char *p, size_t n, int spaced)
{
    char join[2 * JOIN_BYTES + 1];
    size_t side = ts->ix.longest - 1;
    size_t t = ts->tail_len < side ? ts->tail_len : side, k = n < side ? n : side, at = t;
    memcpy(join, ts->tail + ts->tail_len - t, t);
    if (spaced)
        join[at++] = ' ';
    memcpy(join + at, p, k);
    return (match_phrases(ts, join, at + k, 0) & M_ANCHOR) != 0;
}

static int put(char **buf, size_t *len, size_t *cap, const char *p, size_t n)
{
    if (!od_grow((void **)buf, cap, *len + n + 1, 1))
        return 0;
    memcpy(*buf + *len, p, n);
    *len += n;
    return 1;
}

/* Keep one line (normalized) of the input: off and line are its place there. */
static int keep_line(od_triage_stream *ts, const char *p, size_t n, uint64_t off, uint64_t line, int newline)
{
    if (!ts->last_line || line != ts->last_line + 1) {
        if (ts->last_line) {
            if (!put(&ts->kept, &ts->kept_len, &ts->kept_cap, "\n", 1))
                return 0;
            ts->kept_lines++;
        }
        int ok;
        GROW(ts->segs, ts->n_segs, ts->cap_segs, ok);
        if (!ok)
            return 0;
        ts->segs[ts->n_segs++] = (segment){ts->kept_len, ts->kept_lines + 1, off, line};
    }
    if (!put(&ts->kept, &ts->kept_len, &ts->kept_cap, p, n) ||
        (newline && !put(&ts->kept, &ts->kept_len, &ts->kept_cap, "\n", 1)))
        return 0;
    ts->kept_lines += newline != 0;
    ts->last_line = line;
    return 1;
}

/* Keep the lines waiting in the ring (the context before an anchor), oldest first. */
static int flush_ring(od_triage_stream *ts)
{
    for (size_t i = 0; i < ts->rl_n; i++) {
        const ring_line *r = &ts->rl[ts->rl_start + i];
        if (!keep_line(ts, ts->ring + r->at, r->len, r->off, r->line, r->newline))
            return 0;
    }
    ts->rl_start = ts->rl_n = 0;
    ts->ring_start = ts->ring_len = 0;
    ts->ring_bytes = 0;
    return 1;
}

/* Hold a line that may turn out to precede an anchor; forget the oldest beyond what the
 * scanner looks back at. A line counts its line break too, as it does in the whole text the
 * scanner looks back through: else empty lines, which count nothing, were never forgotten
 * (a gzip of 200 M newlines held 8 GiB). */
static int hold_line(od_triage_stream *ts, const char *p, size_t n, uint64_t off, uint64_t line, int newline)
{
    while (ts->rl_n > BEFORE_LINES && (ts->ring_bytes - (ts->rl[ts->rl_start].len + 1) >= BEFORE_BYTES ||
                                       ts->ring_bytes + n + 1 > BEFORE_MAX_BYTES)) {
        ts->ring_bytes -= ts->rl[ts->rl_start].len + 1;
        ts->ring_start = ts->rl[ts->rl_start].at + ts->rl[ts->rl_start].len;
        ts->rl_start++;
        ts->rl_n--;
    }
    if (ts->rl_n == 0)
        ts->ring_start = ts->ring_len = ts->rl_start = 0;
    /* compact when the forgotten front outweighs what is held */
    if (ts->ring_start > ts->ring_len / 2 + 4096) {
        memmove(ts->ring, ts->ring + ts->ring_start, ts->ring_len - ts->ring_start);
        for (size_t i = 0; i < ts->rl_n; i++)
            ts->rl[ts->rl_start + i].at -= ts->ring_start;
        ts->ring_len -= ts->ring_start;
        ts->ring_start = 0;
    }
    if (ts->rl_start > 64 && ts->rl_start > ts->rl_n) {
        memmove(ts->rl, ts->rl + ts->rl_start, ts->rl_n * sizeof *ts->rl);
        ts->rl_start = 0;
    }
    size_t at = ts->ring_len;
    if (!put(&ts->ring, &ts->ring_len, &ts->ring_cap, p, n) ||
        !od_grow((void **)&ts->rl, &ts->rl_cap, ts->rl_start + ts->rl_n + 1, sizeof *ts->rl))
        return 0;
    ts->rl[ts->rl_start + ts->rl_n++] = (ring_line){at, n, off, line, newline};
    ts->ring_bytes += n + 1;
    return 1;
}

static int is_table_row(const char *p, size_t n)
{
    size_t i = 0;
    while (i < n && (p[i] == ' ' || p[i] == '\t'))
        i++;
    return i < n && p[i] == '|';
}

static int stream_line(od_triage_stream *ts, const char *line, size_t n, uint64_t off, int newline)
{
    if (!od_grow((void **)&ts->norm, &ts->norm_cap, n + 1, 1)) {
        ts->st = od_fail(&ts->err, OD_ERR_NOMEM, "out of memory");
        return 1;
    }
    char *p = ts->norm;
    memcpy(p, line, n);
    normalize(p, n);
    uint64_t lineno = ++ts->lineno;

    /* a memory_stats() dump is parsed whole: keep the text while it may be one */
    if (ts->stats_state == 0) {
        size_t i = 0;
        while (i < n && isspace((unsigned char)p[i]))
            i++;
        if (i < n)
            ts->stats_state = p[i] == '{' ? 1 : -1;
    }
    repr_line(&ts->repr, p, n);
    if (ts->repr.nomem) {
        ts->st = od_fail(&ts->err, OD_ERR_NOMEM, "out of memory");
        return 1;
    }
    if (ts->stats_state >= 0) {
        if (ts->stats_len + n + 1 > STATS_MAX_BYTES) {
            ts->stats_state = -1;
        } else if (!put(&ts->stats, &ts->stats_len, &ts->stats_cap, p, n) ||
                   (newline && !put(&ts->stats, &ts->stats_len, &ts->stats_cap, "\n", 1))) {
            ts->st = od_fail(&ts->err, OD_ERR_NOMEM, "out of memory");
            return 1;
        }
        if (ts->stats_state < 0) {
            free(ts->stats);
            ts->stats = NULL;
            ts->stats_len = ts->stats_cap = 0;
        }
    }

    unsigned found = match_phrases(ts, p, n, 1);
    int anchor = (found & M_ANCHOR) != 0;
    /* unwrap() may rejoin a phrase split by the line break before this line */
    size_t h = 0;
    while (h < n && (p[h] == ' ' || p[h] == '\t'))
        h++;
    /* ... as one word (a fixed-width wrap), or at a space (a word wrap: od_torch_phrase_at) */
    if (!anchor && ts->tail_len && h < n)
        anchor = (may_join(ts->tail[ts->tail_len - 1], p[h]) && tail_joins(ts, p + h, n - h, 0)) ||
                  tail_joins(ts, p + h, n - h, 1);
    ts->tail_len = n < JOIN_BYTES ? n : JOIN_BYTES;
    memcpy(ts->tail, p + n - ts->tail_len, ts->tail_len);

    /* the rows of tables the scanner reads to their end */
    int has_comma = memchr(p, ',', n) != NULL;
    if (ts->in_smi_csv && !has_comma)
        ts->in_smi_csv = 0;
    if (ts->in_procs && is_table_row(p, n))
        anchor = 1;
    if (ts->in_smi_csv)
        anchor = 1;
    if (found & M_PROCESSES)
        ts->in_procs = 1;
    if (has_comma && (found & M_SMI_CSV))
        ts->in_smi_csv = 1;

    /* lines are kept normalized, as the scan at the end reads them (the same length) */
    int ok;
    if (anchor) {
        ok = flush_ring(ts) && keep_line(ts, p, n, off, lineno, newline);
        ts->after_left = AFTER_LINES;
    } else if (ts->after_left) {
        ok = keep_line(ts, p, n, off, lineno, newline);
        ts->after_left--;
    } else {
        ok = hold_line(ts, p, n, off, lineno, newline);
    }
    if (!ok) {
        ts->st = od_fail(&ts->err, OD_ERR_NOMEM, "out of memory");
        return 1;
    }
    return 0;
}

static int on_stream_line(void *ctx, const char *line, size_t len, uint64_t off)
{
    return stream_line(ctx, line, len, off, 1);
}

static int on_stream_last(void *ctx, const char *line, size_t len, uint64_t off)
{
    return stream_line(ctx, line, len, off, 0);
}

od_status od_triage_stream_new(od_triage_stream **out, od_error *err)
{
    od_triage_stream *ts = calloc(1, sizeof *ts);
    *out = ts;
    if (!ts)
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    od_lines_init(&ts->lines);
    index_phrases(&ts->ix);
    return OD_OK;
}

size_t od_triage_stream_held_bytes(const od_triage_stream *ts)
{
    return ts->lines.cap + ts->norm_cap + ts->ring_cap + ts->rl_cap * sizeof *ts->rl + ts->kept_cap +
           ts->cap_segs * sizeof *ts->segs + ts->stats_cap;
}

od_status od_triage_stream_feed(od_triage_stream *ts, const void *data, size_t n, od_error *err)
{
    if (ts->st == OD_OK) {
        od_status st = od_lines_feed(&ts->lines, data, n, on_stream_line, ts, &ts->err);
        if (st != OD_OK)
            ts->st = st;
    }
    if (ts->st != OD_OK && err)
        *err = ts->err;
    return ts->st;
}

/* The input's place of a kept-text offset and line number. */
static void map_back(const od_triage_stream *ts, uint64_t *offset, uint64_t *line)
{
    size_t lo = 0, hi = ts->n_segs;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (ts->segs[mid].comp_off <= *offset)
            lo = mid;
        else
            hi = mid;
    }
    const segment *g = &ts->segs[lo];
    *offset = g->orig_off + (*offset - g->comp_off);
    *line = g->orig_line + (*line - g->comp_line);
}

od_status od_triage_stream_finish(od_triage_stream *ts, od_triage **out, od_error *err)
{
    *out = NULL;
    if (ts->st == OD_OK)
        od_lines_end(&ts->lines, on_stream_last, ts);
    if (ts->st != OD_OK) {
        if (err)
            *err = ts->err;
        return ts->st;
    }
    input_flags fl = {
        .jax = ts->flags[F_JAX], .xla_torch = ts->flags[F_XLA_TORCH], .tf = ts->flags[F_TF],
        .onnx = ts->flags[F_ONNX],
        .ctx_lib = ts->flags[F_VLLM] ? "vllm" : ts->flags[F_DEEPSPEED] ? "deepspeed" : NULL,
    };
    if (!put(&ts->kept, &ts->kept_len, &ts->kept_cap, "", 0))
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    ts->kept[ts->kept_len] = '\0';
    repr_end(&ts->repr);
    od_status st = scan_text(ts->kept, ts->kept_len, &fl, ts->stats_state > 0 ? ts->stats : NULL, ts->stats_len,
                             ts->repr.found ? &ts->repr.m : NULL, out, err);
    if (st != OD_OK)
        return st;
    od_triage *t = *out;
    for (size_t i = 0; i < t->n_reports; i++)
        map_back(ts, &t->reports[i].offset, &t->reports[i].line);
    for (size_t i = 0; i < t->n_summaries; i++)
        map_back(ts, &t->summaries[i].offset, &t->summaries[i].line);
    return OD_OK;
}

void od_triage_stream_free(od_triage_stream *ts)
{
    if (!ts)
        return;
    od_lines_free(&ts->lines);
    free(ts->norm);
    free(ts->ring);
    free(ts->rl);
    free(ts->kept);
    free(ts->segs);
    free(ts->stats);
    repr_drop(&ts->repr);
    free(ts);
}

od_status od_triage_parse(const char *text, size_t len, od_triage **out, od_error *err)
{
    od_triage_stream *ts = NULL;
    *out = NULL;
    od_status st = od_triage_stream_new(&ts, err);
    if (st == OD_OK)
        st = od_triage_stream_feed(ts, text, len, err);
    if (st == OD_OK)
        st = od_triage_stream_finish(ts, out, err);
    od_triage_stream_free(ts);
    return st;
}
