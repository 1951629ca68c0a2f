/* plan.h - design for the memory ceiling: does a workload fit a target, what is the
 * largest batch that fits, and which changes make it fit, cheapest compute first.
 *
 * od_plan_compute fills a caller-owned od_plan (a plain value; nothing to free). */
#ifndef OD_PLAN_H
#define OD_PLAN_H

#include "model/estimate.h"
#include "model/gpus.h"

#define OD_PLAN_MAX_MITIGATIONS 24

typedef struct {
    const char *key;            /* stable id: "sdpa", "zero3-dp4", ... */
    char title[96];             /* what to change, in words */
    char flags[256];            /* the plan flags that describe the changed workload */
    double overhead_pct;        /* extra compute per step, percent (negative = faster) */
    const char *overhead;       /* the overhead explained */
    const char *accuracy_risk;  /* "none", "small" or "validate" */
    const char *needs;          /* what it requires ("" = nothing) */
    const char *communication;  /* added communication per step ("" = none) */
    uint64_t peak_allocated_bytes; /* new per-GPU peak */
    uint64_t device_memory_bytes;
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
    size_t n_mitigations;           /* the changes that fit, cheapest compute first */
    od_mitigation mitigations[OD_PLAN_MAX_MITIGATIONS];
    int has_closest;                /* nothing fits: closest is the most that was tried */
    od_mitigation closest;          /* (every change that helps, stacked), fits = 0 */
} od_plan;

/* Estimate w on gpu, search the largest batch that fits, and list the changes that make
 * it fit (each a change to w alone, or all that help stacked when no single one does),
 * cheapest compute first. Changes to the optimizer state are left out when it is under 5%
 * of the peak (LoRA). When nothing fits, closest holds the stack that came nearest. Fails
 * like od_estimate_compute. */
od_status od_plan_compute(const od_model *m, const od_workload *w, const od_gpu *gpu,
                          od_plan *out, od_error *err);

/* The plan flags that describe w (training: --batch --seq --grad-accum --precision ...;
 * inference: --task infer --batch --prompt --new-tokens ...), as `oomdoc plan` takes them. */
void od_plan_workload_flags(const od_workload *w, char *buf, size_t n);

/* Just the fit test for one workload: device memory (reserved + context) in *device. */
od_status od_plan_fits(const od_model *m, const od_workload *w, const od_gpu *gpu,
                       uint64_t *device, int *fits, od_error *err);

/* vLLM's engine: what it does at start-up (vllm/worker: determine_num_available_blocks):
 * a dummy forward of max_num_batched_tokens profiles the activation peak; what is left of
 * gpu_memory_utilization x the GPU's memory after the weights, that peak and the memory
 * outside PyTorch (CUDA context) becomes KV-cache blocks of block_size tokens. */
typedef struct {
    double gpu_memory_utilization;  /* (0, 1]; vLLM's default 0.9 */
    uint64_t max_model_len;         /* tokens one sequence may reach */
    uint64_t block_size;            /* tokens a KV block holds; default 16 */
    uint64_t max_num_seqs;          /* sequences a step may schedule; default 256 */
    uint64_t max_num_batched_tokens;/* tokens the profiling forward runs; 0 = max(model len, 8192)
                                     * (chunked prefill's default in the V1 engine) */
} od_vllm_config;

typedef struct {
    uint64_t budget_bytes;          /* gpu_memory_utilization x memory */
    uint64_t weights_bytes;         /* per GPU */
    uint64_t quantized_params;      /* of them packed by --weights (block linears); 0 = none */
    uint64_t activation_bytes;      /* the profiling forward's peak beyond the weights */
    uint64_t non_torch_bytes;       /* CUDA context and kernels */
    uint64_t kv_cache_bytes;        /* what is left: 0 when nothing is */
    uint64_t block_bytes;           /* one block, all layers, per GPU */
    uint64_t num_blocks;
    uint64_t blocks_per_seq;        /* ceil(max_model_len / block_size) */
    uint64_t max_concurrent_seqs;   /* sequences of max_model_len that fit at once */
    double max_concurrency;         /* num_blocks x block_size / max_model_len (vLLM's log line) */
    int fits;                       /* one sequence of max_model_len fits */
} od_vllm_plan;

/* Set vLLM's defaults (0.9, block 16, 256 sequences, batched tokens 0); max_model_len 0. */
void od_vllm_config_defaults(od_vllm_config *c);

/* KV blocks and concurrent sequences for m served by vLLM with w's weights, kv dtype and
 * tp on gpu. Fails with OD_ERR_ARG on impossible settings (utilization outside (0, 1],
 * zero lengths) naming the option; *out is filled on OD_OK. */
od_status od_plan_vllm(const od_model *m, const od_workload *w, const od_gpu *gpu,
                       const od_vllm_config *cfg, od_vllm_plan *out, od_error *err);

#endif
