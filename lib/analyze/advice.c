/* advice.c - advice sentences, one wording each, for triage and doctor. */
#include "analyze/advice.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The allocator settings read the same under PYTORCH_CUDA_ALLOC_CONF and ROCm's
 * PYTORCH_HIP_ALLOC_CONF: one effect and one check each, the variable's name apart. */
#define EXPANDABLE_WHY "segments grow in place instead of stranding free blocks between fixed-size segments"
#define EXPANDABLE_CHECK "oomdoc replay <snapshot.pickle> --set expandable_segments:True"
#define SPLIT_GC_SETTING "garbage_collection_threshold:0.8,max_split_size_mb:512"
#define SPLIT_GC_WHY "large cached blocks are not split for small requests and are reclaimed earlier"
#define MAX_SPLIT_WHY "cached blocks of 512 MiB or more stay whole for large requests instead of being split for small ones"
#define MAX_SPLIT_CHECK "oomdoc replay <snapshot.pickle> --set max_split_size_mb:512"

#define FREE_RACE_ACTION                                                                                        \
    "watch the GPU's memory and processes through the failure (nvidia-smi; rocm-smi on AMD): the memory was free "  \
    "again when the message was written"
#define FREE_RACE_WHY "shows what took the memory at the failure: another job or rank, or a library's own allocation"

static const od_advice_text texts[OD_ADV_COUNT] = {
    [OD_ADV_EXPANDABLE] = {"set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True", EXPANDABLE_WHY, EXPANDABLE_CHECK, 0},
    [OD_ADV_EXPANDABLE_HIP] = {"set PYTORCH_HIP_ALLOC_CONF=expandable_segments:True", EXPANDABLE_WHY, EXPANDABLE_CHECK, 0},
    [OD_ADV_SPLIT_GC] = {"set PYTORCH_CUDA_ALLOC_CONF=" SPLIT_GC_SETTING, SPLIT_GC_WHY,
                         "oomdoc replay <snapshot.pickle> --set " SPLIT_GC_SETTING, 1},
    [OD_ADV_SPLIT_GC_HIP] = {"set PYTORCH_HIP_ALLOC_CONF=" SPLIT_GC_SETTING, SPLIT_GC_WHY,
                             "oomdoc replay <snapshot.pickle> --set " SPLIT_GC_SETTING, 1},
    [OD_ADV_MAX_SPLIT] = {"set PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:512", MAX_SPLIT_WHY, MAX_SPLIT_CHECK, 1},
    [OD_ADV_MAX_SPLIT_HIP] = {"set PYTORCH_HIP_ALLOC_CONF=max_split_size_mb:512", MAX_SPLIT_WHY, MAX_SPLIT_CHECK, 1},
    [OD_ADV_SHAPES_FIXED] = {"allocate long-lived tensors first and keep shapes fixed (pad to a few bucket sizes); "
                             "call torch.cuda.empty_cache() only between phases",
                             "freed blocks fit the next requests exactly", NULL, 0},
    [OD_ADV_TF_ASYNC] = {"set TF_GPU_ALLOCATOR=cuda_malloc_async",
                         "the BFC pool fragments; the asynchronous allocator does not keep one", NULL, 0},
    /* The cap is ratio x the device's recommended working set; the ratio defaults to 1.7 and
     * may be at most 2.0 on unified memory (aten/src/ATen/mps/MPSAllocator.mm, init_allocator;
     * PyTorch's "MPS Environment Variables" page). */
    [OD_ADV_MPS_WATERMARK] = {"set PYTORCH_MPS_HIGH_WATERMARK_RATIO=2.0, the most it takes on Apple silicon (the "
                              "default is 1.7; 0.0 removes the cap, at the risk of swapping and system instability)",
                              "the pool may grow to 2.0/1.7 of the watermark that stopped it", NULL, 0},
    [OD_ADV_MPS_SHRINK] = {"reduce the batch size, or free other allocations held by the process",
                           "the step fits under the watermark", NULL, 1},
    [OD_ADV_RAISE_FRACTION] = {"raise or remove torch.cuda.set_per_process_memory_fraction(...): the device itself had "
                               "room",
                               "the cap stops binding", "oomdoc plan --config <config.json>", 0},
    [OD_ADV_SHRINK_TO_CAP] = {"shrink the step to fit the cap (micro-batch with gradient accumulation, activation "
                              "checkpointing)",
                              "the step's peak drops below the cap", "oomdoc plan --config <config.json>", 1},
    [OD_ADV_STOP_OTHERS] = {"stop or move the other processes holding memory on this GPU",
                            "their memory becomes available to this job", "oomdoc gpus", 0},
    [OD_ADV_OTHER_GPU] = {"run on an idle GPU (CUDA_VISIBLE_DEVICES=N)", "the whole device is available",
                          "oomdoc gpus", 1},
    [OD_ADV_EXCLUSIVE] = {"make GPUs exclusive to one job (nvidia-smi -c EXCLUSIVE_PROCESS, or the scheduler's GPU "
                          "isolation)",
                          "no other process can take memory from a running job", NULL, 0},
    [OD_ADV_SHRINK_STEP] = {"halve the micro-batch and use gradient accumulation to keep the global batch; or activation "
                            "checkpointing, bf16 autocast, a fused or 8-bit optimizer",
                            "each lowers the peak; the planner says which one suffices",
                            "oomdoc plan --config <config.json>", 0},
    [OD_ADV_PLAN_FIRST] = {"estimate what fits before launching, with the job's --batch and --seq",
                           "the batch size comes from the estimate, not by trial", "oomdoc plan --config <config.json>", 0},
    [OD_ADV_TF_INFO] = {"TF prints no pool figures here: tf.config.experimental.get_memory_info('GPU:0') or the BFC "
                        "allocator's Stats: dump give them",
                        "the pool's figures tell capacity from fragmentation", NULL, 0},
    [OD_ADV_TORCH_SNAPSHOT] = {"capture a memory snapshot at the OOM: torch.cuda.memory._record_memory_history("
                               "max_entries=100000), then torch.cuda.memory._dump_snapshot(\"oom.pickle\") in the except "
                               "block",
                               "oomdoc doctor tells capacity, fragmentation and leaks apart from it",
                               "oomdoc doctor <oom.pickle>", 0},
    [OD_ADV_FREE_RACE] = {FREE_RACE_ACTION, FREE_RACE_WHY, "oomdoc watch -- <command>", 0},
    [OD_ADV_FREE_RACE_HIP] = {FREE_RACE_ACTION, FREE_RACE_WHY, NULL, 0},
    /* torch.distributed: "torch.cuda.set_device(local_rank)" before init; barrier(device_ids=)
     * and torch.load(map_location=) keep a rank off GPU 0. */
    [OD_ADV_RANK_CONTEXTS] = {"keep every rank on its own GPU: torch.cuda.set_device(local_rank) before any CUDA "
                              "work, torch.load(..., map_location=f\"cuda:{local_rank}\") and "
                              "dist.barrier(device_ids=[local_rank]); processes holding about the same small amount "
                              "each on one GPU are other ranks' CUDA contexts",
                              "their contexts leave this GPU", "oomdoc gpus", 0},
    /* tensorflow/core/common_runtime/gpu/gpu_process_state.cc: the host allocator's limit,
     * TF_GPU_HOST_MEM_LIMIT_IN_MB, 1 << 16 MB by default. */
    [OD_ADV_TF_HOST_LIMIT] = {"raise TF_GPU_HOST_MEM_LIMIT_IN_MB (65536, 64 GiB, by default) if the host has the "
                              "RAM; or keep fewer and smaller tensors on the CPU between GPU steps",
                              "the pinned host pool may grow past the limit that stopped it", NULL, 0},
    [OD_ADV_JAX_PROFILE] = {"save a device memory profile where memory peaks: "
                            "jax.profiler.save_device_memory_profile(\"memory.prof\") right after the step",
                            "oomdoc doctor names the source lines that hold the live buffers",
                            "oomdoc doctor <memory.prof>", 0},
    [OD_ADV_JAX_PREALLOC] = {"JAX preallocates 75% of the GPU: XLA_PYTHON_CLIENT_MEM_FRACTION=.95 gives it more, "
                             "XLA_PYTHON_CLIENT_PREALLOCATE=false allocates on demand",
                             "more of the device is available to the pool, or memory is taken on demand", NULL, 0},
    [OD_ADV_TF_GROWTH] = {"tf.config.experimental.set_memory_growth(gpu, True)",
                          "TF stops taking the whole GPU up front", NULL, 0},
    [OD_ADV_LEAK_USUAL] = {"keep Python numbers, not tensors, across steps (loss.item()), wrap evaluation in "
                           "torch.no_grad(), and detach() or .cpu() what is stored for logging",
                           "no autograd graph or tensor outlives its step", NULL, 0},
    [OD_ADV_CI_SNAPSHOT] = {"keep a snapshot check in CI: oomdoc doctor --fail-on leak on a few recorded steps",
                            "a tensor kept across iterations fails the build, with the site that keeps it",
                            "oomdoc doctor <snapshot.pickle> --fail-on leak", 0},
    [OD_ADV_RECORD_HISTORY] = {"record a memory snapshot over a few steps (torch.cuda.memory._record_memory_history) "
                               "and run oomdoc doctor on it",
                               "names the code site whose allocations survive each step", "oomdoc doctor <snapshot.pickle>", 0},
    [OD_ADV_EMPTY_CACHE] = {"call torch.cuda.empty_cache() before the large request (e.g. after evaluation)",
                            "cached segments no live block uses return to the device", NULL, 0},
    [OD_ADV_SIZE_BUG] = {"check the shape and dtype of the failing allocation first: it is larger than the whole "
                         "device, so no setting makes it fit (a wrong dimension, a batch of the whole data set, a "
                         "quadratic attention matrix)",
                         "a shape or size bug is fixed at its source", NULL, 0},
    [OD_ADV_SIZE_CORRUPT] = {"treat the size as corrupted (an overflowed or uninitialized length, a bad input shape): "
                             "no device has this much memory",
                             "the real size comes from the code that computed it", NULL, 0},
    [OD_ADV_DRIVER_SMI] = {"run nvidia-smi while the job runs: it shows every process's memory, which a memory "
                           "snapshot does not",
                           "tells whether another process, the CUDA context or an extension holds the memory",
                           "oomdoc gpus", 0},
    [OD_ADV_LIB_HEADROOM] = {"leave the library room outside the framework's pool: torch.cuda.empty_cache() before "
                             "the call, tf.config.experimental.set_memory_growth(gpu, True) for TF, "
                             "XLA_PYTHON_CLIENT_PREALLOCATE=false for JAX",
                             "the handle and workspace allocations find free device memory", NULL, 0},
    [OD_ADV_NCCL_BUFFERS] = {"shrink NCCL's own buffers (NCCL_BUFFSIZE=4194304, fewer channels with "
                             "NCCL_MAX_NCHANNELS) or call torch.cuda.empty_cache() before the first collective",
                             "NCCL's allocations outside the framework's pool fit", NULL, 0},
    [OD_ADV_HOST_RAM] = {"lower host RAM use: fewer DataLoader workers (num_workers) and a smaller prefetch_factor, "
                         "load weights with mmap or low_cpu_mem_usage=True, less CPU offload; or add RAM or swap",
                         "the process stays under the machine's (or the container's) memory limit", NULL, 0},
    [OD_ADV_HOST_SHM] = {"give the container more shared memory (docker run --shm-size=16g, or --ipc=host); or "
                         "DataLoader(num_workers=0)",
                         "workers' batches fit in /dev/shm (Docker's default is 64 MB)", NULL, 0},
    [OD_ADV_VLLM_RAISE] = {"raise gpu_memory_utilization (e.g. 0.95), or lower max_model_len (and max_num_seqs)",
                           "more of the device goes to KV cache blocks, or each sequence needs fewer", NULL, 0},
    [OD_ADV_VLLM_LOWER] = {"set gpu_memory_utilization below the free fraction printed, or free the GPU of other "
                           "processes first",
                           "vLLM asks only for memory that is free at startup", "oomdoc gpus", 0},
    [OD_ADV_ORT_ARENA] = {"bound ONNX Runtime's arena: CUDAExecutionProvider options gpu_mem_limit and "
                          "arena_extend_strategy=kSameAsRequested",
                          "the arena grows by what is asked, not by doubling", NULL, 0},
    /* PyTorch 0.3-0.4 (THCCachingAllocator): no memory_summary, no allocator settings, no
     * snapshots; 0.4 has torch.no_grad() and .item(), 0.3 volatile=True and .data[0]. */
    [OD_ADV_THC_ERA] = {"this is PyTorch 0.4 or older (the THC allocator): wrap evaluation in torch.no_grad() (0.4; "
                        "volatile=True in 0.3), accumulate loss.item() (0.4; loss.data[0] in 0.3) rather than the "
                        "loss tensor, and lower the batch size; torch.cuda.max_memory_allocated() (0.4) shows the peak",
                        "no autograd graph outlives its step, and the step's peak drops", NULL, 0},
    [OD_ADV_RUNTIME_LIMITS] = {"make the runtime hold less at once: a smaller batch, beam or context length, fewer "
                               "layers offloaded to the GPU, or a smaller or quantized model; check nvidia-smi (rocm-smi) "
                               "for other processes on the device",
                               "what the runtime asks for fits the device's free memory", "oomdoc gpus", 0},
    /* triton/runtime (OutOfResources): the kernel's shared memory per block against the SM's. */
    [OD_ADV_KERNEL_SMEM] = {"give the kernel a configuration with less shared memory per block: smaller BLOCK sizes or "
                            "fewer num_stages (an autotuner's configs, a smaller head dimension); more GPU memory does "
                            "not help",
                            "each block's shared memory fits the hardware limit the message prints", NULL, 0},
    [OD_ADV_ENGINE_KV] = {"raise the engine's memory fraction (SGLang --mem-fraction-static, TGI --cuda-memory-fraction) "
                          "or shorten the context it reserves for (--max-total-tokens, --max-batch-prefill-tokens); "
                          "a smaller or quantized model leaves more for the KV cache",
                          "the KV cache gets a budget after the weights", NULL, 0},
    [OD_ADV_RAISE_SETTING] = {"raise the fraction of the GPU the framework may take, which the message names "
                              "(PaddlePaddle: FLAGS_fraction_of_gpu_memory_to_use, below 1.0); or make the step need "
                              "less",
                              "the framework's share of the device holds the request", NULL, 0},
    [OD_ADV_XLA_REMAT] = {"reduce the per-device batch, rematerialize activations (jax.checkpoint / remat), or "
                          "shard parameters and optimizer state over more devices",
                          "the compiled program's memory drops below the memory space", NULL, 0},
};

const od_advice_text *od_advice_get(od_advice a)
{
    return (unsigned)a < OD_ADV_COUNT ? &texts[a] : &texts[OD_ADV_PLAN_FIRST];
}

int od_advice_for_version(const char *action, const char *effect, const char *detail, const od_torch_range *r,
                          char *buf, size_t size, int *lacks)
{
    const char *named[3] = {action, effect, detail};
    int f = od_torch_missing_feature(r, named, 3, lacks);
    if (f >= 0 && *lacks) {
        char v[32];
        od_torch_version_format(od_torch_since((od_torch_feature)f), v, sizeof v);
        snprintf(buf, size, "upgrade to torch >= %s, then %s", v, action);
    } else {
        snprintf(buf, size, "%s", action);
    }
    return f;
}

size_t od_advice_fragmentation(const od_oom_report *r, od_advice out[2])
{
    int hip = r->framework == OD_FW_PYTORCH_ROCM;
    int gc = !r->have_torch_range || od_torch_range_has(&r->torch_range, OD_TORCH_GARBAGE_COLLECTION_THRESHOLD) == 1;
    out[0] = hip ? OD_ADV_EXPANDABLE_HIP : OD_ADV_EXPANDABLE;
    out[1] = gc ? (hip ? OD_ADV_SPLIT_GC_HIP : OD_ADV_SPLIT_GC) : (hip ? OD_ADV_MAX_SPLIT_HIP : OD_ADV_MAX_SPLIT);
    return 2;
}

const char *od_advice_command(const char *command, const od_torch_range *r, int upgraded)
{
    if (command && !upgraded && r && strstr(command, "oomdoc replay ") &&
        od_torch_range_has(r, OD_TORCH_RECORD_MEMORY_HISTORY_TRACE) == 0)
        return NULL;
    return command;
}

size_t od_advice_hints(const od_oom_report *r, od_hint *out, size_t max)
{
    od_advice h[10];
    od_hint all[10];
    size_t n = od_advice_for_report(r, h, sizeof h / sizeof h[0]), k = 0, prev = SIZE_MAX;
    const od_torch_range *rg = r->have_torch_range ? &r->torch_range : NULL;
    for (size_t i = 0; i < n; i++) {
        const od_advice_text *t = od_advice_get(h[i]);
        od_hint *hint = &all[i];
        memset(hint, 0, sizeof *hint);
        hint->id = h[i];
        int f = od_advice_for_version(t->action, t->effect, NULL, rg, hint->action, sizeof hint->action, &hint->upgrade);
        if (f >= 0 && !hint->upgrade && rg) { /* the releases straddle the feature's first */
            char v[32];
            size_t l = strlen(hint->action);
            od_torch_version_format(od_torch_since((od_torch_feature)f), v, sizeof v);
            snprintf(hint->action + l, sizeof hint->action - l, ", which needs torch >= %s", v);
        }
        hint->command = od_advice_command(t->command, rg, hint->upgrade);
    }
    /* what the user's torch can follow first, then the upgrades */
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < n && k < max; i++) {
            if (all[i].upgrade != pass)
                continue;
            /* "or ..." only right after the remedy it is the alternative to */
            all[i].alternative = od_advice_get(h[i])->alternative && k > 0 && prev == i - 1;
            prev = i;
            out[k++] = all[i];
        }
    return k;
}

size_t od_advice_for_report(const od_oom_report *r, od_advice *out, size_t max)
{
    od_advice h[10];
    size_t n = 0;
    int torch = r->framework == OD_FW_PYTORCH_CUDA || r->framework == OD_FW_PYTORCH_ROCM;
    /* TF's stream executor sizes its first pool from the free memory the driver reports: a
     * corrupt size there is the driver's figure, and growing the pool avoids asking for it. */
    if (r->size_corrupt && r->kind == OD_KIND_DRIVER && r->framework == OD_FW_TENSORFLOW) {
        h[n++] = OD_ADV_TF_GROWTH;
        goto done;
    }
    if (r->backoff_steps && r->kind == OD_KIND_DRIVER && r->framework == OD_FW_TENSORFLOW) {
        h[n++] = OD_ADV_TF_GROWTH;
        h[n++] = OD_ADV_DRIVER_SMI;
        goto done;
    }
    if (r->size_corrupt)
        h[n++] = OD_ADV_SIZE_CORRUPT;
    else if (r->size_bug)
        h[n++] = OD_ADV_SIZE_BUG;
    switch (r->kind) {
    case OD_KIND_HOST_SHM:
        h[n++] = OD_ADV_HOST_SHM;
        h[n++] = OD_ADV_HOST_RAM;
        goto done;
    case OD_KIND_HOST_RAM:
    case OD_KIND_HOST_KILLED:
        /* (the general host remedies are PyTorch's: DataLoader workers, low_cpu_mem_usage) */
        h[n++] = !strcmp(r->library, "tf-pinned") ? OD_ADV_TF_HOST_LIMIT : OD_ADV_HOST_RAM;
        goto done;
    case OD_KIND_VLLM_CACHE:
    case OD_KIND_VLLM_KV_LEN:
        h[n++] = OD_ADV_VLLM_RAISE;
        goto done;
    case OD_KIND_VLLM_STARTUP:
        h[n++] = OD_ADV_VLLM_LOWER;
        h[n++] = OD_ADV_STOP_OTHERS;
        goto done;
    case OD_KIND_XLA_COMPILE:
        h[n++] = OD_ADV_XLA_REMAT;
        goto done;
    case OD_KIND_KERNEL_RESOURCES:
        h[n++] = OD_ADV_KERNEL_SMEM;
        goto done;
    case OD_KIND_ENGINE_KV:
        h[n++] = OD_ADV_ENGINE_KV;
        goto done;
    case OD_KIND_LIBRARY:
        h[n++] = r->framework == OD_FW_NCCL ? OD_ADV_NCCL_BUFFERS : OD_ADV_LIB_HEADROOM;
        h[n++] = OD_ADV_DRIVER_SMI;
        goto done;
    case OD_KIND_DRIVER:
        if (r->verdict == OD_OOM_UNKNOWN) {
            h[n++] = OD_ADV_DRIVER_SMI;
            h[n++] = OD_ADV_STOP_OTHERS;
            goto done;
        }
        break;
    default:
        break;
    }
    if (r->framework == OD_FW_ONNXRUNTIME)
        h[n++] = OD_ADV_ORT_ARENA;
    /* PyTorch 0.4 and older: the era's own remedies first */
    if (torch && r->have_torch_range && od_torch_version_known(r->torch_range.upper) &&
        r->torch_range.upper.major == 0)
        h[n++] = OD_ADV_THC_ERA;
    /* a runtime without advice of its own: what it holds at once, whatever the verdict */
    if (r->framework == OD_FW_OTHER && r->verdict != OD_OOM_OTHER_PROCESSES) {
        if (r->fraction_permille)
            h[n++] = OD_ADV_RAISE_SETTING;
        h[n++] = OD_ADV_RUNTIME_LIMITS;
        goto done;
    }
    switch (r->verdict) {
    case OD_OOM_FRAGMENTATION:
        if (torch) {
            n += od_advice_fragmentation(r, h + n);
            h[n++] = OD_ADV_SHAPES_FIXED;
        } else if (r->framework == OD_FW_TENSORFLOW || r->framework == OD_FW_JAX) {
            h[n++] = OD_ADV_TF_ASYNC;
        }
        break;
    case OD_OOM_CAP_LIMIT:
        if (r->fraction_permille) {
            h[n++] = OD_ADV_RAISE_SETTING;
        } else if (r->framework == OD_FW_PYTORCH_MPS) {
            h[n++] = OD_ADV_MPS_WATERMARK;
            h[n++] = OD_ADV_MPS_SHRINK;
        } else {
            h[n++] = OD_ADV_RAISE_FRACTION;
            h[n++] = OD_ADV_SHRINK_TO_CAP;
        }
        break;
    case OD_OOM_OTHER_PROCESSES:
        if (r->stray_contexts)
            h[n++] = OD_ADV_RANK_CONTEXTS;
        if (r->framework == OD_FW_JAX) /* a second JAX process's preallocation, most often */
            h[n++] = OD_ADV_JAX_PREALLOC;
        h[n++] = OD_ADV_STOP_OTHERS;
        h[n++] = OD_ADV_OTHER_GPU;
        break;
    case OD_OOM_CAPACITY:
        if (r->stray_contexts)
            h[n++] = OD_ADV_RANK_CONTEXTS;
        h[n++] = OD_ADV_SHRINK_STEP;
        h[n++] = OD_ADV_PLAN_FIRST;
        break;
    case OD_OOM_UNKNOWN:
        if (r->framework == OD_FW_TENSORFLOW)
            h[n++] = OD_ADV_TF_INFO;
        else if (r->free_exceeds_request) {
            h[n++] = r->framework == OD_FW_PYTORCH_ROCM ? OD_ADV_FREE_RACE_HIP : OD_ADV_FREE_RACE;
            h[n++] = OD_ADV_EXCLUSIVE;
        } else if (torch || r->framework == OD_FW_PYTORCH_MPS)
            h[n++] = OD_ADV_TORCH_SNAPSHOT;
        break;
    case OD_OOM_HOST_MEMORY:
        h[n++] = OD_ADV_HOST_RAM;
        break;
    }
    if (r->framework == OD_FW_JAX && r->verdict != OD_OOM_OTHER_PROCESSES)
        h[n++] = OD_ADV_JAX_PREALLOC;
    else if (r->framework == OD_FW_TENSORFLOW && r->verdict != OD_OOM_FRAGMENTATION)
        h[n++] = OD_ADV_TF_GROWTH;
done:;
    size_t k = n < max ? n : max;
    for (size_t i = 0; i < k; i++)
        out[i] = h[i];
    return k;
}

/* Which runtime spoke, for the reports of runtimes oomdoc has no framework of their own for
 * (framework "other"): one sentence per library name (contexts.def's names). */
static const struct {
    const char *library, *meaning;
} runtimes[] = {
    {"ggml", "ggml (llama.cpp) could not allocate a device buffer for the model's layers or its compute graph: the "
             "layers offloaded to the GPU, the context length and the batch decide how much it asks for"},
    {"ollama", "ollama's runner (llama.cpp's ggml underneath) could not allocate a device buffer: the layers it "
               "offloads to the GPU, the context length and other models loaded decide how much it asks for"},
    {"ctranslate2", "CTranslate2 (faster-whisper, whisperX) could not allocate device memory: the model's size and "
                    "compute type (float16, int8), the beam size and the batch decide how much it asks for"},
    {"mxnet", "MXNet's pooled storage manager could not get device memory from cudaMalloc; the pool keeps what it "
              "took, so memory that grows over several runs in one process stays held"},
    {"cupy", "CuPy's memory pool could not allocate on the device; the pool keeps freed blocks for reuse "
             "(cupy.get_default_memory_pool().free_all_blocks() gives them back)"},
    {"directml", "torch-directml (DirectX 12) could not allocate a tensor in the GPU's video memory: its own "
                 "allocator, not PyTorch's CUDA one, and no PyTorch memory setting applies"},
    {"tensorrt", "TensorRT could not allocate device memory while building or running an engine: its workspace "
                 "(the memory pool limit) and the batch size decide how much it asks for"},
    {"paddle", "PaddlePaddle's allocator could not get the memory on the GPU; FLAGS_fraction_of_gpu_memory_to_use "
               "bounds how much of the device it may take"},
    {"caffe", "Caffe's cudaMalloc (its SyncedMemory) failed: the net's blobs at this batch and input size did not "
              "fit the device"},
    {"cntk", "CNTK's CUDA allocation failed: the device was full when it asked"},
    {"torch7", "Lua Torch (cutorch's THC allocator) could not allocate on the device; its messages print no "
               "figures"},
    {"triton", "a Triton kernel asked for more shared memory per block than the GPU's streaming multiprocessor "
               "has: a limit of the kernel's configuration, not of the device's memory"},
    {"tgi", "text-generation-inference's warm-up found no room for its batch beside the model's weights in the "
            "GPU memory it may use"},
    {"sglang", "SGLang found no room for its KV cache under --mem-fraction-static once the weights were loaded"},
    {"spconv", "spconv's tensorview could not allocate on the device (its own cudaMalloc, outside PyTorch's pool)"},
    {"mallocmc", "mallocMC's reserve pool could not get its memory from cudaMalloc: the device was full when it "
                 "asked"},
    {"reactant-xla", "XLA, compiling for Reactant, found the program cannot fit the device's memory"},
};

/* The sentence for a report of framework "other" (or any generic wording). */
static const char *runtime_meaning(const od_oom_report *r)
{
    for (size_t i = 0; i < sizeof runtimes / sizeof runtimes[0]; i++)
        if (!strcmp(r->library, runtimes[i].library))
            return runtimes[i].meaning;
    if (r->kind == OD_KIND_GENERIC && r->framework != OD_FW_OTHER)
        return "an out-of-memory error in the runtime's own words rather than its allocator's message: the figures "
               "it prints, where it prints them, are all there is";
    return r->framework == OD_FW_OTHER
               ? "a runtime oomdoc has no wording of its own for reported a failed allocation in its own words: the "
                 "figures it prints, where it prints them, are all there is"
               : NULL;
}

const char *od_advice_meaning(const od_oom_report *r)
{
    const char *rt;
    if (r->kind == OD_KIND_KERNEL_RESOURCES || r->kind == OD_KIND_ENGINE_KV || r->framework == OD_FW_OTHER ||
        r->kind == OD_KIND_GENERIC)
        if ((rt = runtime_meaning(r)))
            return rt;
    if (r->first_pool)
        return "TensorFlow asks the driver for a pool of about all the memory free at start-up and asks 10% less "
               "when refused: this request is that pool, and TF runs on with a smaller one";
    if (r->held_at_startup)
        return "TensorFlow sizes its pool from the memory free when it starts: with the device mostly held by other "
               "processes then, its pool is what was left";
    if (r->at_context)
        return "a CUDA context could not be created: the device was full (or in exclusive-process mode) before the "
               "job allocated anything; nvidia-smi shows who holds it";
    if (r->log_processes)
        return "several processes' lines of the same refusal (a scheduler's workers on one GPU): each one's memory is "
               "what the others were refused";
    if (r->cap_blocks)
        return "the pool reached its per-process cap: the cache's free blocks did not serve the request and the cap "
               "left no room to grow, though the device had it";
    if (r->have_torch_range && od_torch_version_known(r->torch_range.upper) && r->torch_range.upper.major == 0 &&
        od_framework_torch_like(r->framework))
        return "PyTorch 0.4 or older (the THC caching allocator): its message prints no figures, and that era has "
               "none of the allocator settings or snapshots later advice names";
    switch (r->kind) {
    case OD_KIND_DRIVER:
        if (r->size_corrupt && r->framework == OD_FW_TENSORFLOW)
            return "TensorFlow asks the driver for its whole pool at startup, sized from the free memory the driver "
                   "reports, and backs off by 10% per failure: a size no device has means that report was garbage "
                   "(a driver or ROCm/CUDA runtime mismatch); memory growth asks for what the program needs instead";
        if (r->backoff_steps && r->framework == OD_FW_TENSORFLOW)
            return "TensorFlow sizes its pool from the free memory the driver reports and, refused, asks 10% less "
                   "until it gets a pool: the device could not give all it reported free (another process, or "
                   "memory the driver cannot hand out), and TF runs on with the smaller pool";
        if (r->framework == OD_FW_PYTORCH_CUDA || r->framework == OD_FW_PYTORCH_ROCM)
            return "the CUDA driver's own error, outside the caching allocator: memory was refused to CUDA context "
                   "creation, an extension's own cudaMalloc, or because another process or exclusive-process mode "
                   "holds the GPU; a memory snapshot will not show it, nvidia-smi will";
        return "a CUDA (or HIP) allocation made by the framework's own code (not its pool) failed: the device was "
               "full when it asked";
    case OD_KIND_LIBRARY:
        if (r->framework == OD_FW_DEEPSPEED)
            return "DeepSpeed's inference kernels allocate their workspace with cudaMalloc outside PyTorch's pool, "
                   "sized from the memory the device reports free: what PyTorch caches or other processes hold is "
                   "not free to it (max_out_tokens in init_inference sets how much it wants)";
        if (r->framework == OD_FW_NCCL)
            return "NCCL allocates its buffers with cudaMalloc outside the framework's pool, so a pool that caches "
                   "the device starves it: empty_cache() before the collective, or smaller NCCL buffers";
        return "cuBLAS/cuDNN allocate handles and workspaces outside the framework's pool, so a pool that caches "
               "the device starves them: empty_cache(), TF memory growth or JAX preallocation off leave them room";
    case OD_KIND_HOST_RAM:
        if (!strcmp(r->library, "tf-pinned"))
            return "TensorFlow's pinned (page-locked) host pool, which stages tensors copied between the CPU and "
                   "the GPU, reached its limit or the host's RAM: not GPU memory";
        return "host RAM, not GPU memory, ran out: the CPU allocator was refused";
    case OD_KIND_HOST_KILLED:
        return "SIGKILL (signal 9, exit code -9) with no Python error is the kernel's OOM killer: host RAM ran out, "
               "not GPU memory (dmesg shows \"Out of memory: Killed process\")";
    case OD_KIND_HOST_SHM:
        return "shared memory (/dev/shm) ran out, not GPU memory: DataLoader workers pass batches through it, and "
               "Docker gives a container 64 MB unless --shm-size or --ipc=host";
    case OD_KIND_VLLM_CACHE:
    case OD_KIND_VLLM_KV_LEN:
        return "vLLM sizes its KV cache from what gpu_memory_utilization leaves after weights and activations: this "
               "wants a higher gpu_memory_utilization (or a shorter max_model_len), not a lower one";
    case OD_KIND_VLLM_STARTUP:
        return "vLLM claims gpu_memory_utilization x total at startup and less than that was free: here the "
               "setting must go down (or the GPU be freed), unlike the cache-block error";
    case OD_KIND_XLA_COMPILE:
        return "XLA computed at compile time that the program cannot fit: nothing ran, and no allocator setting "
               "helps; the program must need less";
    case OD_KIND_XLA_RESERVE:
        return r->verdict == OD_OOM_FRAGMENTATION
                   ? "enough memory was free but not as one range at the bottom of the device: fragmentation of "
                     "the TPU's memory"
                   : NULL;
    default:
        break;
    }
    /* cudaMallocAsync prints 2^64 as its limit when no fraction is set: that one is no garbage. */
    int garbage = r->garbage_figure && r->framework == OD_FW_PYTORCH_CUDA && strcmp(r->library, "cudaMallocAsync");
    if (garbage && r->spill)
        return "allocated memory above the device's capacity: on Windows/WSL the driver spills into shared system "
               "memory before failing, and its 17179869184.00 GiB (2^64 bytes) free figure is garbage, ignored";
    if (garbage)
        return "the 17179869184.00 GiB figure (2^64 bytes) is a garbage value (NVML/CUDA on Windows or WSL): it "
               "was ignored";
    if (r->self_from_other)
        return "the \"Process N\" figure is this process seen under another PID (a container): it is not another "
               "process";
    if (r->spill)
        return "allocated memory above the device's capacity: on Windows/WSL the driver spills into shared system "
               "memory (slowly) before failing";
    if (r->free_exceeds_request)
        return "the device had the memory free when the message was written: it was taken and given back around "
               "the failure (another job or rank, a library's own cudaMalloc), or the driver could not hand out "
               "what it reports free (Windows' WDDM, an APU sharing system memory)";
    if (r->near_full)
        return "defragmenting would serve this one request, but the framework already holds >= 90% of the device: "
               "the next request fails the same way";
    if (r->msg_hint_expandable && (r->framework == OD_FW_PYTORCH_CUDA || r->framework == OD_FW_PYTORCH_ROCM) &&
        (r->have & OD_HAVE_RESERVED_UNALLOC) && (r->have & OD_HAVE_REQUESTED) &&
        r->reserved_unallocated_bytes < r->requested_bytes && r->verdict != OD_OOM_FRAGMENTATION)
        return "the message's own expandable_segments hint does not apply: less is reserved but unallocated than "
               "the request, so defragmenting the cache would not serve it";
    return NULL;
}
