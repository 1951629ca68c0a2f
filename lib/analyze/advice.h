/* advice.h - the one home of advice text: what to try, in words, with the effect expected
 * and the oomdoc command that shows it. `oomdoc triage` hints and `oomdoc doctor`
 * prescriptions both take their sentences from here, so one remedy has one wording.
 *
 * Everything returned is static (never freed). */
#ifndef OD_ADVICE_H
#define OD_ADVICE_H

#include <stddef.h>

#include "base/torchver.h"
#include "read/triage/triage.h"

typedef enum {
    OD_ADV_EXPANDABLE,        /* PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True */
    OD_ADV_EXPANDABLE_HIP,    /* the same for ROCm */
    OD_ADV_SPLIT_GC,          /* garbage_collection_threshold + max_split_size_mb */
    OD_ADV_SPLIT_GC_HIP,      /* the same for ROCm */
    OD_ADV_MAX_SPLIT,         /* max_split_size_mb alone (torch 1.10-1.11 have no GC) */
    OD_ADV_MAX_SPLIT_HIP,     /* the same for ROCm */
    OD_ADV_SHAPES_FIXED,      /* long-lived tensors first, fixed shapes */
    OD_ADV_TF_ASYNC,          /* TF_GPU_ALLOCATOR=cuda_malloc_async */
    OD_ADV_MPS_WATERMARK,     /* PYTORCH_MPS_HIGH_WATERMARK_RATIO */
    OD_ADV_MPS_SHRINK,
    OD_ADV_RAISE_FRACTION,    /* set_per_process_memory_fraction */
    OD_ADV_SHRINK_TO_CAP,
    OD_ADV_STOP_OTHERS,       /* other processes on the GPU */
    OD_ADV_OTHER_GPU,
    OD_ADV_EXCLUSIVE,
    OD_ADV_SHRINK_STEP,       /* batch, checkpointing, precision, optimizer */
    OD_ADV_PLAN_FIRST,        /* oomdoc plan before launching */
    OD_ADV_TF_INFO,
    OD_ADV_TORCH_SNAPSHOT,    /* record a snapshot at the OOM */
    OD_ADV_JAX_PREALLOC,
    OD_ADV_TF_GROWTH,
    OD_ADV_LEAK_USUAL,        /* .item(), no_grad, detach */
    OD_ADV_CI_SNAPSHOT,
    OD_ADV_RECORD_HISTORY,
    OD_ADV_EMPTY_CACHE,
    OD_ADV_SIZE_BUG,          /* the request exceeds the whole device */
    OD_ADV_SIZE_CORRUPT,      /* an absurd request: a corrupted size */
    OD_ADV_DRIVER_SMI,        /* driver-level OOM: nvidia-smi shows who holds the memory */
    OD_ADV_LIB_HEADROOM,      /* cuBLAS / cuDNN: leave room outside the framework's pool */
    OD_ADV_NCCL_BUFFERS,      /* NCCL's buffers */
    OD_ADV_HOST_RAM,          /* host RAM: workers, loading, offload */
    OD_ADV_HOST_SHM,          /* /dev/shm: --shm-size, --ipc=host */
    OD_ADV_VLLM_RAISE,        /* raise gpu_memory_utilization or shorten max_model_len */
    OD_ADV_VLLM_LOWER,        /* lower gpu_memory_utilization below what is free */
    OD_ADV_ORT_ARENA,         /* ONNX Runtime's arena settings */
    OD_ADV_XLA_REMAT,         /* XLA compile-time OOM: remat, sharding */
    OD_ADV_JAX_PROFILE,       /* JAX's device memory profile at the peak */
    OD_ADV_FREE_RACE,         /* free >= request at the message: watch what came and went */
    OD_ADV_FREE_RACE_HIP,     /* the same on ROCm (no NVML: no oomdoc watch) */
    OD_ADV_RANK_CONTEXTS,     /* other ranks' CUDA contexts on this GPU */
    OD_ADV_TF_HOST_LIMIT,     /* TF's pinned host allocator's limit */
    OD_ADV_THC_ERA,           /* PyTorch 0.4 and older: what that era's API offers */
    OD_ADV_RUNTIME_LIMITS,    /* another runtime: what it holds at once */
    OD_ADV_KERNEL_SMEM,       /* a kernel's per-block shared memory (Triton) */
    OD_ADV_ENGINE_KV,         /* an inference engine's KV budget under its memory fraction */
    OD_ADV_RAISE_SETTING,     /* a memory-fraction setting the message names (Paddle's flag) */
    OD_ADV_COUNT
} od_advice;

typedef struct {
    const char *action;       /* what to do */
    const char *effect;       /* what it changes */
    const char *command;      /* an oomdoc command that shows or sizes it (runnable once its
                                 <file> placeholders are given), or NULL */
    int alternative;          /* offered instead of the remedy before it in a report's list
                                 (a list shows it "or ..." right after that one) */
} od_advice_text;

/* The text of one remedy. */
const od_advice_text *od_advice_get(od_advice a);

/* What to try for a triage report, best first: up to max remedies into out; returns how
 * many. Depends on the framework (each has its own knobs) and the verdict. */
size_t od_advice_for_report(const od_oom_report *r, od_advice *out, size_t max);

/* The action as a user of the releases r allows (NULL: unknown) can follow it, into
 * buf[0..size): the action itself when no feature that it, its effect or its detail
 * (either may be NULL) name may be missing; "upgrade to torch >= V, then <action>" when
 * no allowed release has one. Returns the feature that
 * decided: one no allowed release has (*lacks 1), or one some may lack (*lacks 0; the
 * action is unchanged and the caller may say "needs torch >= V"); -1 when nothing named
 * may be missing. */
int od_advice_for_version(const char *action, const char *effect, const char *detail, const od_torch_range *r,
                          char *buf, size_t size, int *lacks);

/* The command of an advice item as a user of the releases r (NULL: unknown) can run it:
 * command itself, or NULL when it replays a snapshot's trace and no release r allows
 * records one (trace_alloc_max_entries, torch 2.0); an item turned into an upgrade
 * (upgraded) keeps it, for after the upgrade. */
const char *od_advice_command(const char *command, const od_torch_range *r, int upgraded);

/* One hint for a triage report, as its user can follow it. */
typedef struct {
    od_advice id;             /* its od_advice_get text gives the effect */
    const char *command;      /* its command as od_advice_command gives it, or NULL */
    char action[320];         /* the action, or "upgrade to torch >= V, then <action>", with
                                 ", which needs torch >= V" when the releases straddle V */
    int upgrade;              /* the releases the message dates it to all lack a feature it names */
    int alternative;          /* it follows the remedy it is an alternative to: "or ..." */
} od_hint;

/* The allocator settings against fragmentation, for the report's framework and the
 * releases its wording allows (unknown: the newest): expandable_segments, then
 * garbage_collection_threshold with max_split_size_mb where every allowed release has the
 * threshold (1.12+), else max_split_size_mb alone (1.10+, the message's own hint). Both
 * commands offer these two, in this order. Writes out[0..2); returns 2. */
size_t od_advice_fragmentation(const od_oom_report *r, od_advice out[2]);

/* od_advice_for_report's remedies through od_advice_for_version with the report's own
 * torch releases (od_oom_report.torch_range; unknown when the wording does not date it):
 * those the user's torch can follow first, then the upgrades, each group in its order.
 * Up to max into out; returns how many. */
size_t od_advice_hints(const od_oom_report *r, od_hint *out, size_t max);

/* What the report means, in one sentence, where the message itself misleads (the driver's
 * "CUDA error: out of memory", a library's status, vLLM's cache-block error, the message's
 * own expandable_segments hint when little is cached, ...); NULL when it says what it is. */
const char *od_advice_meaning(const od_oom_report *r);

#endif
