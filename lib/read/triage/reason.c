/* reason.c - the names of frameworks, kinds and verdicts, and the reason sentence of the
 * verdicts that come from a report's wording or a rule of classify.c (od_triage_reason). */
#include <stdio.h>
#include <string.h>

#include "base/units.h"
#include "read/triage/scan.h"

static const struct {
    const char *name, *setting;
    int torch_like;
} frameworks[] = {
#define FRAMEWORK(id, name, setting, torch_like) [id] = {name, setting, torch_like},
#include "read/triage/frameworks.def"
#undef FRAMEWORK
};
#define N_FRAMEWORKS (sizeof frameworks / sizeof frameworks[0])

const char *od_framework_name(od_framework f)
{
    return (unsigned)f < N_FRAMEWORKS ? frameworks[f].name : "unknown";
}

const char *od_framework_setting(od_framework f)
{
    return (unsigned)f < N_FRAMEWORKS ? frameworks[f].setting : NULL;
}

int od_framework_torch_like(od_framework f)
{
    return (unsigned)f < N_FRAMEWORKS && frameworks[f].torch_like;
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
    case OD_KIND_GENERIC: return "generic";
    case OD_KIND_KERNEL_RESOURCES: return "kernel_resources";
    case OD_KIND_ENGINE_KV: return "engine_kv_budget";
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

/* Reserved-but-unallocated, zero where the allocator has no separate cache figure. */
static uint64_t ru_of(const od_oom_report *r)
{
    return (r->have & OD_HAVE_RESERVED_UNALLOC) ? r->reserved_unallocated_bytes : 0;
}

/* The reasons that come from the wording. Returns 1 when it wrote one. */
static int by_kind(const od_oom_report *r, char *buf, size_t size)
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
            return -1;
        snprintf(buf, size, "gpu_memory_utilization asks for %s of the device, but only %s was free at startup: "
                            "%s short, held by other processes or a previous engine",
                 od_format_iec(r->requested_bytes, a, sizeof a), od_format_iec(r->free_bytes, b, sizeof b),
                 od_format_iec(r->missing_bytes, c, sizeof c));
        return 1;
    case OD_KIND_XLA_COMPILE:
        if (!r->have_headroom)
            return -1;
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
        if (r->at_context) {
            snprintf(buf, size, "the driver refused memory to create a CUDA context: the device was full before this "
                                "job allocated anything, held by other processes (or reserved by exclusive mode)");
            return 1;
        }
        if (r->log_processes && r->verdict == OD_OOM_OTHER_PROCESSES) {
            snprintf(buf, size, "the driver refused memory to %u processes at once (their log prefixes differ): "
                                "each was refused what the others held on the device",
                     r->log_processes + 1);
            return 1;
        }
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
            return -1;
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
    return 0;
}

/* The reasons of the pool rules that classify.c names. Returns 1 when it wrote one. */
static int by_pool(const od_oom_report *r, char *buf, size_t size)
{
    char a[32], b[32], c[32];
    if (r->first_pool) {
        snprintf(buf, size, "%s requested is about all the %s free when TensorFlow started: the first pool it sizes "
                            "from the free memory, asked for while it starts (it retries smaller), not what the job "
                            "needs",
                 od_format_iec(r->requested_bytes, a, sizeof a), od_format_iec(r->startup_free_bytes, b, sizeof b));
        return 1;
    }
    if (r->held_at_startup) {
        snprintf(buf, size, "when TensorFlow started, only %s of the device's %s was free: %s was held by other "
                            "processes, and TF sizes its pool from what is free",
                 od_format_iec(r->startup_free_bytes, a, sizeof a), od_format_iec(r->startup_total_bytes, b, sizeof b),
                 od_format_iec(r->held_elsewhere_bytes, c, sizeof c));
        return 1;
    }
    if (r->cap_blocks) {
        char d[32], e[32] = "room";
        if (r->have & OD_HAVE_FREE)
            od_format_iec(r->free_bytes, e, sizeof e);
        snprintf(buf, size, "the per-process cap (%s allowed) is all but reached: %s allocated and %s cached leave "
                            "less under it than the %s requested needs (the figures rounded), while the device had "
                            "%s free: the cap stopped the allocator from growing, whatever its cache held",
                 od_format_iec(r->allowed_bytes, a, sizeof a), od_format_iec(r->allocated_bytes, b, sizeof b),
                 od_format_iec(ru_of(r), c, sizeof c), od_format_iec(r->requested_bytes, d, sizeof d), e);
        return 1;
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
        od_format_iec(od_tr_job_bytes(r), c, sizeof c);
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
        int cap = od_tr_capped(r);
        snprintf(buf, size, "%s requested <= %s available, so fragmentation is the proximate cause; but only %s "
                            "is stranded in the cache (under 5%% of the %s) and %s is %s: the %s is full",
                 od_format_iec(r->requested_bytes, a, sizeof a), od_format_iec(r->available_bytes, b, sizeof b),
                 od_format_iec(ru_of(r), c, sizeof c), cap ? "cap" : "device",
                 od_format_iec(r->headroom_bytes, e, sizeof e), cap ? "left under it" : "free", cap ? "cap" : "device");
        return 1;
    }
    if (r->near_full) {
        uint64_t limit = od_tr_capped(r) ? r->allowed_bytes : r->capacity_bytes;
        char lim[32];
        snprintf(buf, size, "%s requested <= %s available, so fragmentation is the proximate cause; but %s of %s "
                            "is already allocated (>= 90%%): the work does not fit",
                 od_format_iec(r->requested_bytes, a, sizeof a), od_format_iec(r->available_bytes, b, sizeof b),
                 od_format_iec(r->allocated_bytes, c, sizeof c), od_format_iec(limit, lim, sizeof lim));
        return 1;
    }
    return 0;
}

int od_triage_reason(const od_oom_report *r, char *buf, size_t size)
{
    int k = by_kind(r, buf, size);
    return k > 0 || (k == 0 && by_pool(r, buf, size));
}
