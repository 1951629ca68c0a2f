/* plan.h - design for the memory ceiling: does a workload fit a target, what is the
 * largest batch that fits, and which changes make it fit, cheapest compute first.
 *
 * od_plan_compute fills a caller-owned od_plan (a plain value; nothing to free). */
#ifndef OD_PLAN_H
#define OD_PLAN_H

#include "model/estimate.h"
#include "model/gpus.h"

#define OD_PLAN_MAX_MITIGATIONS 24

/* A recipe: one change, or several together, to the workload. */
typedef struct {
    char key[96];               /* stable id of the parts joined by '+': "lora+full-checkpointing" */
    char title[200];            /* what to change, in words */
    char flags[320];            /* the plan flags that describe the changed workload */
    double overhead_pct;        /* extra compute per step, percent (negative = faster): the
                                 * sum of the parts' */
    char overhead[160];         /* the overhead explained */
    char accuracy_risk[64];     /* the worst of the parts': "none", "small" or "validate: ..." */
    char needs[200];            /* what it requires ("" = nothing) */
    char communication[160];    /* added communication per step ("" = none) */
    uint64_t peak_allocated_bytes; /* new per-GPU peak */
    uint64_t device_memory_bytes;
    uint64_t gpus;              /* GPUs it runs on (dp x tp x pp x cp) */
    uint64_t more_gpus;         /* of them beyond what the workload has now (0: none) */
    int parts;                  /* changes it combines */
    int fits;
    od_workload workload;
} od_mitigation;

typedef struct {
    od_estimate estimate;
    uint64_t cuda_context_bytes;
    uint64_t device_memory_bytes;   /* peak reserved + context: what nvidia-smi shows */
    uint64_t target_bytes;
    int fits;
    uint64_t max_batch;             /* largest batch that fits (0: not even 1) */
    /* It fits: at most 3 single changes that lower the peak, cheapest first. It does not:
     * the cheapest recipes that fit, those on the GPUs it has (dp x tp x pp x cp) first,
     * each minimal (no part can be dropped). */
    size_t n_mitigations;
    od_mitigation mitigations[OD_PLAN_MAX_MITIGATIONS];
    int has_closest;                /* nothing fits: closest is the most that was tried */
    od_mitigation closest;          /* (every change that helps, together), fits = 0 */
} od_plan;

/* Estimate w on gpu, search the largest batch that fits, and the recipes: when it does
 * not fit, combinations of changes (checkpointing, 8-bit optimizer, LoRA / QLoRA,
 * micro-batch + accumulation, offload, ZeRO / tensor / pipeline parallelism, and the free
 * ones) that fit, cheapest compute first, the ones that need no more GPUs first; when it
 * fits, the three cheapest single changes that lower the peak. Changes to the optimizer
 * state are left out when it is under 5% of the peak (LoRA). When nothing fits, closest
 * holds everything that helps, together. Fails like od_estimate_compute. */
od_status od_plan_compute(const od_model *m, const od_workload *w, const od_gpu *gpu,
                          od_plan *out, od_error *err);

/* The plan flags that describe w (training: --batch --seq --grad-accum --precision ...;
 * inference: --task infer --batch --prompt --new-tokens ...), as `oomdoc plan` takes them. */
void od_plan_workload_flags(const od_workload *w, char *buf, size_t n);

/* Just the fit test for one workload: device memory (reserved + context) in *device. */
od_status od_plan_fits(const od_model *m, const od_workload *w, const od_gpu *gpu,
                       uint64_t *device, int *fits, od_error *err);

/* vLLM's V1 engine: what it does at start-up (vllm/v1/worker/gpu_worker.py
 * determine_available_memory): a dummy forward of max_num_batched_tokens profiles the
 * activation peak; what is left of gpu_memory_utilization x the GPU's memory after the
 * weights, that peak and the memory outside PyTorch (CUDA context) becomes KV-cache blocks
 * of block_size tokens (or exactly kv_cache_memory_bytes when given); CUDA graphs are
 * captured afterwards, outside that budget, unless enforce_eager. */
typedef enum { OD_VLLM_SERVE, OD_VLLM_LLM } od_vllm_entry; /* vllm serve / the LLM class */

typedef struct {
    double gpu_memory_utilization;  /* (0, 1]; vLLM's default 0.9 */
    uint64_t max_model_len;         /* tokens one sequence may reach */
    uint64_t block_size;            /* tokens a KV block holds; default 16 */
    uint64_t max_num_seqs;          /* sequences a step may schedule; 0 = V1's default */
    uint64_t max_num_batched_tokens;/* tokens a step (and the profiling forward) runs;
                                     * 0 = V1's default for the GPU and the entry point */
    od_vllm_entry entry;
    uint64_t pp;                    /* pipeline stages (layers split by get_pp_indices) */
    int enforce_eager;              /* no CUDA graphs */
    uint64_t kv_cache_memory_bytes; /* --kv-cache-memory: the KV cache's size, no profiling
                                     * budget; 0 = from gpu_memory_utilization */
    int disable_hybrid;             /* --disable-hybrid-kv-cache-manager: sliding-window
                                     * layers allocate as full attention */
} od_vllm_config;

typedef struct {
    uint64_t max_num_batched_tokens, max_num_seqs; /* as used (the defaults resolved) */
    uint64_t budget_bytes;          /* gpu_memory_utilization x memory */
    uint64_t weights_bytes;         /* per GPU of the most constrained stage */
    uint64_t quantized_params;      /* of them packed by --weights (block linears); 0 = none */
    uint64_t activation_bytes;      /* the profiling forward's peak beyond the weights */
    uint64_t non_torch_bytes;       /* CUDA context and kernels */
    uint64_t cuda_graph_bytes;      /* the graphs' memory pool (0 with enforce_eager) */
    uint64_t kv_cache_bytes;        /* what is left: 0 when nothing is */
    uint64_t device_bytes;          /* all of it on the GPU: budget or the parts, + graphs */
    uint64_t kv_heads_per_gpu;      /* max(1, kv heads / tp); 1 for MLA (its latent is
                                     * whole on every rank) */
    int kv_replicated;              /* tp > kv heads: the heads are copied, not split */
    uint64_t stage_layers;          /* attention layers of that stage */
    uint64_t page_bytes;            /* one block of one layer */
    uint64_t block_bytes;           /* one block across a KV-cache group (what num_blocks
                                     * divides by): page x layers per group */
    uint64_t num_blocks;
    uint64_t group_size, n_groups;  /* layers per KV-cache group; groups */
    uint64_t blocks_per_seq;        /* blocks one sequence of max_model_len takes, all groups
                                     * (sliding windows cap theirs) */
    uint64_t max_concurrent_seqs;   /* sequences of max_model_len that fit at once */
    double max_concurrency;         /* num_blocks / blocks_per_seq (vLLM's log line) */
    int hybrid;                     /* both full and windowed layers: the figures below are
                                     * the hybrid manager's alternative */
    uint64_t alt_num_blocks, alt_blocks_per_seq; /* hybrid: with the manager disabled (or,
                                     * when it is, enabled) */
    double alt_max_concurrency;
    int fits;                       /* one sequence of max_model_len fits */
} od_vllm_plan;

/* Set vLLM's defaults (0.9, block 16, serve, the V1 batch defaults, pp 1). */
void od_vllm_config_defaults(od_vllm_config *c);

/* V1's max_num_batched_tokens and max_num_seqs defaults for this GPU and entry point:
 * 8192 / 1024 (serve) and 16384 / 1024 (LLM) on GPUs of 70 GiB or more that are not an
 * A100, else 2048 / 256 and 8192 / 256 (vllm/engine/arg_utils.py). */
void od_vllm_defaults_for(const od_gpu *gpu, od_vllm_entry entry, uint64_t *batched_tokens,
                          uint64_t *num_seqs);

/* KV blocks and concurrent sequences for m served by vLLM with w's weights, kv dtype and
 * tp on gpu. Fails with OD_ERR_ARG on impossible settings (utilization outside (0, 1],
 * zero lengths, tp the heads do not allow) naming the option; *out is filled on OD_OK. */
od_status od_plan_vllm(const od_model *m, const od_workload *w, const od_gpu *gpu,
                       const od_vllm_config *cfg, od_vllm_plan *out, od_error *err);

#endif
