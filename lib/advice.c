/* advice.c - advice sentences, one wording each, for triage and doctor. */
#include "advice.h"

static const od_advice_text texts[OD_ADV_COUNT] = {
    [OD_ADV_EXPANDABLE] = {"set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
                           "segments grow in place instead of stranding free blocks between fixed-size segments",
                           "oomdoc replay <snapshot.pickle> --set expandable_segments:True"},
    [OD_ADV_EXPANDABLE_HIP] = {"set PYTORCH_HIP_ALLOC_CONF=expandable_segments:True",
                               "segments grow in place instead of stranding free blocks between fixed-size segments",
                               "oomdoc replay <snapshot.pickle> --set expandable_segments:True"},
    [OD_ADV_SPLIT_GC] = {"or PYTORCH_CUDA_ALLOC_CONF=garbage_collection_threshold:0.8,max_split_size_mb:512",
                         "large cached blocks are not split for small requests and are reclaimed earlier",
                         "oomdoc replay <snapshot.pickle> --set garbage_collection_threshold:0.8,max_split_size_mb:512"},
    [OD_ADV_MAX_SPLIT] = {"set PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:512",
                          "cached blocks of 512 MiB or more stay whole for large requests instead of being split "
                          "for small ones",
                          "oomdoc replay <snapshot.pickle> --set max_split_size_mb:512"},
    [OD_ADV_SHAPES_FIXED] = {"allocate long-lived tensors first and keep shapes fixed (pad to a few bucket sizes); "
                             "call torch.cuda.empty_cache() only between phases",
                             "freed blocks fit the next requests exactly", NULL},
    [OD_ADV_TF_ASYNC] = {"set TF_GPU_ALLOCATOR=cuda_malloc_async",
                         "the BFC pool fragments; the asynchronous allocator does not keep one", NULL},
    [OD_ADV_MPS_WATERMARK] = {"raise PYTORCH_MPS_HIGH_WATERMARK_RATIO (e.g. 1.7; 0.0 removes the cap, at the risk of "
                              "system instability)",
                              "the pool may grow past the watermark that stopped it", NULL},
    [OD_ADV_MPS_SHRINK] = {"or reduce the batch size, or free other allocations held by the process",
                           "the step fits under the watermark", NULL},
    [OD_ADV_RAISE_FRACTION] = {"raise or remove torch.cuda.set_per_process_memory_fraction(...): the device itself had "
                               "room",
                               "the cap stops binding", "oomdoc plan --config <config.json>"},
    [OD_ADV_SHRINK_TO_CAP] = {"or shrink the step to fit the cap (micro-batch with gradient accumulation, activation "
                              "checkpointing)",
                              "the step's peak drops below the cap", "oomdoc plan --config <config.json>"},
    [OD_ADV_STOP_OTHERS] = {"stop or move the other processes holding memory on this GPU",
                            "their memory becomes available to this job", "oomdoc gpus"},
    [OD_ADV_OTHER_GPU] = {"or run on an idle GPU (CUDA_VISIBLE_DEVICES=N)", "the whole device is available",
                          "oomdoc gpus"},
    [OD_ADV_EXCLUSIVE] = {"make GPUs exclusive to one job (nvidia-smi -c EXCLUSIVE_PROCESS, or the scheduler's GPU "
                          "isolation)",
                          "no other process can take memory from a running job", NULL},
    [OD_ADV_SHRINK_STEP] = {"halve the micro-batch and use gradient accumulation to keep the global batch; or activation "
                            "checkpointing, bf16 autocast, a fused or 8-bit optimizer",
                            "each lowers the peak; the planner says which one suffices",
                            "oomdoc plan --config <config.json>"},
    [OD_ADV_PLAN_FIRST] = {"estimate what fits before launching, with the job's --batch and --seq",
                           "the batch size comes from the estimate, not by trial", "oomdoc plan --config <config.json>"},
    [OD_ADV_TF_INFO] = {"TF prints no pool figures here: tf.config.experimental.get_memory_info('GPU:0') or the BFC "
                        "allocator's Stats: dump give them",
                        "the pool's figures tell capacity from fragmentation", NULL},
    [OD_ADV_TORCH_SNAPSHOT] = {"capture a memory snapshot at the OOM: torch.cuda.memory._record_memory_history("
                               "max_entries=100000), then torch.cuda.memory._dump_snapshot(\"oom.pickle\") in the except "
                               "block",
                               "oomdoc doctor tells capacity, fragmentation and leaks apart from it",
                               "oomdoc doctor <oom.pickle>"},
    [OD_ADV_JAX_PREALLOC] = {"JAX preallocates 75% of the GPU: XLA_PYTHON_CLIENT_MEM_FRACTION=.95 gives it more, "
                             "XLA_PYTHON_CLIENT_PREALLOCATE=false allocates on demand",
                             "more of the device is available to the pool, or memory is taken on demand", NULL},
    [OD_ADV_TF_GROWTH] = {"tf.config.experimental.set_memory_growth(gpu, True)",
                          "TF stops taking the whole GPU up front", NULL},
    [OD_ADV_LEAK_USUAL] = {"keep Python numbers, not tensors, across steps (loss.item()), wrap evaluation in "
                           "torch.no_grad(), and detach() or .cpu() what is stored for logging",
                           "no autograd graph or tensor outlives its step", NULL},
    [OD_ADV_CI_SNAPSHOT] = {"keep a snapshot check in CI: oomdoc doctor --fail-on leak on a few recorded steps",
                            "a tensor kept across iterations fails the build, with the site that keeps it",
                            "oomdoc doctor <snapshot.pickle> --fail-on leak"},
    [OD_ADV_RECORD_HISTORY] = {"record a memory snapshot over a few steps (torch.cuda.memory._record_memory_history) "
                               "and run oomdoc doctor on it",
                               "names the code site whose allocations survive each step", "oomdoc doctor <snapshot.pickle>"},
    [OD_ADV_EMPTY_CACHE] = {"call torch.cuda.empty_cache() before the large request (e.g. after evaluation)",
                            "cached segments no live block uses return to the device", NULL},
};

const od_advice_text *od_advice_get(od_advice a)
{
    return (unsigned)a < OD_ADV_COUNT ? &texts[a] : &texts[OD_ADV_PLAN_FIRST];
}

size_t od_advice_for_report(const od_oom_report *r, od_advice *out, size_t max)
{
    od_advice h[8];
    size_t n = 0;
    int torch = r->framework == OD_FW_PYTORCH_CUDA || r->framework == OD_FW_PYTORCH_ROCM;
    switch (r->verdict) {
    case OD_OOM_FRAGMENTATION:
        if (torch) {
            h[n++] = r->framework == OD_FW_PYTORCH_ROCM ? OD_ADV_EXPANDABLE_HIP : OD_ADV_EXPANDABLE;
            h[n++] = OD_ADV_SPLIT_GC;
            h[n++] = OD_ADV_SHAPES_FIXED;
        } else if (r->framework == OD_FW_TENSORFLOW || r->framework == OD_FW_JAX) {
            h[n++] = OD_ADV_TF_ASYNC;
        }
        break;
    case OD_OOM_CAP_LIMIT:
        if (r->framework == OD_FW_PYTORCH_MPS) {
            h[n++] = OD_ADV_MPS_WATERMARK;
            h[n++] = OD_ADV_MPS_SHRINK;
        } else {
            h[n++] = OD_ADV_RAISE_FRACTION;
            h[n++] = OD_ADV_SHRINK_TO_CAP;
        }
        break;
    case OD_OOM_OTHER_PROCESSES:
        h[n++] = OD_ADV_STOP_OTHERS;
        h[n++] = OD_ADV_OTHER_GPU;
        break;
    case OD_OOM_CAPACITY:
        h[n++] = OD_ADV_SHRINK_STEP;
        h[n++] = OD_ADV_PLAN_FIRST;
        break;
    case OD_OOM_UNKNOWN:
        if (r->framework == OD_FW_TENSORFLOW)
            h[n++] = OD_ADV_TF_INFO;
        else if (torch || r->framework == OD_FW_PYTORCH_MPS)
            h[n++] = OD_ADV_TORCH_SNAPSHOT;
        break;
    }
    if (r->framework == OD_FW_JAX)
        h[n++] = OD_ADV_JAX_PREALLOC;
    else if (r->framework == OD_FW_TENSORFLOW && r->verdict != OD_OOM_FRAGMENTATION)
        h[n++] = OD_ADV_TF_GROWTH;
    size_t k = n < max ? n : max;
    for (size_t i = 0; i < k; i++)
        out[i] = h[i];
    return k;
}
