/* estimate.h - how much GPU memory one training step or one generate() call takes, from
 * the way PyTorch (2.x caching allocator, autograd, autocast, SDPA) and transformers
 * really allocate: what autograd saves per op, autocast's bf16 weight copies, the fp32
 * upcast of logits in the loss and its gradient, optimizer state and foreach
 * temporaries, library workspaces.
 *
 * The figure predicted is torch.cuda.max_memory_allocated() in steady state (step 2 on:
 * optimizer state exists). Everything here is a plain value; nothing to free. */
#ifndef OD_ESTIMATE_H
#define OD_ESTIMATE_H

#include "read/models.h"

typedef enum { OD_TASK_TRAIN, OD_TASK_INFER } od_task;
enum { OD_OFFLOAD_NONE, OD_OFFLOAD_CPU, OD_OFFLOAD_NVME };
/* Main gradients under mixed precision: the framework's default (fp32: Megatron's
 * main_grad buffer, DeepSpeed's fp32 gradient partition), fp32, or the 16-bit gradients
 * alone (Megatron --grad-reduce-in-bf16). */
enum { OD_MAIN_GRADS_DEFAULT, OD_MAIN_GRADS_FP32, OD_MAIN_GRADS_BF16 };
/* The pipeline stage an estimate is of: the most loaded one, the first (embedding), the
 * last (output layer and loss). */
enum { OD_STAGE_MAX, OD_STAGE_FIRST, OD_STAGE_LAST };
typedef enum {
    OD_PREC_FP32,       /* fp32 weights, fp32 compute */
    OD_PREC_AMP_BF16,   /* fp32 weights under torch.autocast(bfloat16) */
    OD_PREC_AMP_FP16,   /* fp32 weights under torch.autocast(float16) + GradScaler */
    OD_PREC_BF16,       /* weights, gradients and optimizer state in bf16 */
    OD_PREC_MIXED_FP16, /* fp16 weights and gradients, fp32 master weights in the
                         * optimizer state (DeepSpeed / Megatron mixed precision) */
    OD_PREC_MIXED_BF16  /* the same with bf16 */
} od_precision;
typedef enum {
    OD_OPT_ADAMW,       /* torch.optim.AdamW, default (foreach) implementation */
    OD_OPT_ADAMW_FUSED, /* AdamW(fused=True) */
    OD_OPT_SGD,         /* SGD with momentum */
    OD_OPT_SGD_NOMOM,   /* plain SGD */
    OD_OPT_ADAFACTOR,   /* torch.optim.Adafactor (factored second moment) */
    OD_OPT_ADAM8BIT,    /* bitsandbytes AdamW8bit (block-wise 8-bit states) */
    OD_OPT_PAGED_ADAM8BIT /* bitsandbytes PagedAdamW8bit: the same states in CUDA unified
                         * memory, paged to the host under pressure; counted here as
                         * resident (what the GPU holds until it runs short) */
} od_optimizer;
typedef enum { OD_ATTN_SDPA, OD_ATTN_EAGER, OD_ATTN_FLASH } od_attention;
typedef enum { OD_CKPT_NONE, OD_CKPT_FULL, OD_CKPT_SELECTIVE } od_ckpt;
/* Inference weights. The quantized forms store the block linears (attention, MLP,
 * experts, as vLLM merges them) packed; embeddings, lm_head, norms and biases stay 16-bit. */
typedef enum {
    OD_W_BF16, OD_W_FP16, OD_W_FP32,
    OD_W_INT8,          /* int8 + a 16-bit scale per output channel (LLM.int8, W8A8) */
    OD_W_INT4,          /* generic 4-bit with a 16-bit scale per 64 values */
    OD_W_GPTQ4,         /* GPTQ 4-bit, group 128: int32 qweight (K/8 x N), qzeros (K/128 x N/8),
                         * fp16 scales (K/128 x N), int32 g_idx (K) per linear */
    OD_W_AWQ4,          /* AWQ 4-bit, group 128: the same without g_idx */
    OD_W_NF4,           /* bitsandbytes NF4: 4 bits + an fp32 absmax per 64 values */
    OD_W_FP8            /* fp8 e4m3 with a per-tensor fp32 scale */
} od_weights;
/* The frozen base of a LoRA fine-tune (QLoRA: nf4). */
typedef enum {
    OD_BASE_DEFAULT,    /* the precision's weight dtype */
    OD_BASE_NF4,        /* bitsandbytes Linear4bit NF4, double quantization: 0.5 B/param +
                         * an 8-bit absmax per 64 + an fp32 scale per 256 absmax blocks */
    OD_BASE_INT8,       /* bitsandbytes Linear8bitLt: int8 + an fp32 scale per row */
    OD_BASE_BF16
} od_base_weights;
/* LoRA target modules (a bit each); 0 = all-linear. */
enum { OD_LORA_Q = 1, OD_LORA_K = 2, OD_LORA_V = 4, OD_LORA_O = 8, OD_LORA_GATE = 16,
       OD_LORA_UP = 32, OD_LORA_DOWN = 64, OD_LORA_ALL = 127 };
typedef enum {
    OD_KV_NONE,         /* generate() with use_cache off: every step re-runs the sequence */
    OD_KV_DYNAMIC,      /* transformers' DynamicCache (torch.cat per step) */
    OD_KV_STATIC,       /* StaticCache: prompt + new tokens allocated up front */
    OD_KV_PAGED         /* paged blocks (vLLM style), rounded up to --paged-block */
} od_kv_cache;

typedef struct {
    od_task task;
    uint64_t batch;             /* micro-batch per GPU (training) or sequences (inference) */
    uint64_t seq;               /* training sequence length */
    od_precision precision;
    od_optimizer optimizer;
    od_attention attention;
    od_ckpt ckpt;
    uint64_t grad_accum;        /* micro-steps per optimizer step (1 = none) */
    int zero;                   /* ZeRO / FSDP stage 0..3 across dp GPUs */
    uint64_t dp, tp, pp;        /* data, tensor, pipeline parallel degrees (1 = none) */
    int sp;                     /* Megatron sequence parallelism (with tp > 1): norms,
                                 * dropouts and the residual stream split along the sequence
                                 * over the tp GPUs */
    uint64_t cp;                /* context parallelism (Megatron-Core): each of cp GPUs holds
                                 * seq/cp tokens of every sequence; 1 = none */
    uint64_t vpp;               /* virtual pipeline stages per GPU (interleaved 1F1B); 1 = none */
    uint64_t lora_rank;         /* 0 = full fine-tuning */
    unsigned lora_targets;      /* OD_LORA_* bits; 0 = all-linear */
    od_base_weights base_weights; /* the frozen base under LoRA */
    uint64_t freeze_layers;     /* embeddings and the first N layers frozen: no gradients,
                                 * no optimizer state, nothing saved for backward there */
    int chunked_loss;           /* loss computed in chunks: no full fp32 logits */
    int offload_optimizer;      /* OD_OFFLOAD_*: optimizer state and step on the CPU, or the
                                 * state on NVMe (DeepSpeed ZeRO-Infinity) */
    /* DeepSpeed: model states laid out as its ZeRO stages do (its estimators in
     * runtime/zero/stage_1_and_2.py and stage3.py), with params offload and zero.Init;
     * nodes split dp GPUs into nodes x dp/nodes. */
    int deepspeed;
    /* Megatron-Core: bf16 parameters with fp32 main gradients and the distributed
     * optimizer as --zero 1, per pipeline stage, the layer Megatron-Core builds (TE fused
     * norms and linears, fused SwiGLU, flash attention), expert parallelism. */
    int megatron;
    int main_grads;             /* OD_MAIN_GRADS_*: the gradient buffer the optimizer reads
                                 * under mixed precision */
    double buffer_factor;       /* DeepSpeed's additional_buffer_factor on host RAM; 0 = 1.5 */
    int stage;                  /* OD_STAGE_*: which pipeline stage the estimate is of */
    uint64_t first_stage_layers, last_stage_layers; /* uneven pipelines; 0 = even */
    uint64_t ep, etp;           /* expert parallel / expert tensor parallel (MoE; 0 or 1 =
                                 * none; etp 0 = tp, Megatron's default) */
    /* PyTorch FSDP (zero is then its own: full = 3, grad-op = 2; hybrid shards within a
     * node of dp/nodes GPUs) or DDP (full replicas + gradient buckets). */
    enum { OD_FSDP_NONE, OD_FSDP_FULL, OD_FSDP_GRAD_OP, OD_FSDP_HYBRID } fsdp;
    int ddp;
    int ddp_bucket_view;        /* DDP(gradient_as_bucket_view=True): no bucket copies */
    int offload_params;
    int zero_init;
    uint64_t nodes;
    /* inference */
    uint64_t prompt, new_tokens;
    od_weights weights;
    int kv_bytes;               /* bytes per KV element; 0 = the activation dtype */
    od_kv_cache kv_cache;
    uint64_t paged_block;
    /* device */
    /* One cuBLAS workspace (cuBLASLt shares it), which torch allocates once per thread
     * and stream through the caching allocator and never frees: training holds two (the
     * forward's thread and the autograd engine's), inference one. */
    uint64_t workspace_bytes;
} od_workload;

/* Memory by purpose, at one instant. */
typedef struct {
    uint64_t parameters, gradients, optimizer_states, activations,
        logits_and_loss, kv_cache, temporaries, workspace; /* workspace: cuBLAS/cuBLASLt */
} od_breakdown;

#define OD_MAX_ASSUMPTIONS 28

typedef struct {
    uint64_t params;                /* parameter count of the whole model */
    od_breakdown at_peak;           /* sums to peak_allocated_bytes */
    uint64_t peak_allocated_bytes;
    uint64_t forward_peak_bytes, backward_peak_bytes, optimizer_peak_bytes;
    uint64_t first_step_peak_bytes; /* step 1: optimizer state not yet created */
    uint64_t peak_reserved_bytes;   /* caching allocator's reserve at the peak (rough) */
    const char *peak_phase;         /* "forward", "backward", "optimizer", "prefill", "decode" */
    const char *attention_kernel;   /* "flash", "mem_efficient", "math", "eager" */
    uint64_t quantized_params;      /* inference, quantized --weights: the block-linear parameters
                                     * stored packed (the rest stays 16-bit); 0 otherwise */
    uint64_t ssm_state_bytes_per_sequence; /* state-space layers' fixed recurrent state of one
                                        * sequence (conv + SSM states), per GPU; 0 without */
    uint64_t moe_decode_copy_bytes_per_token; /* inference, MoE: what one MoE layer of a decode
                                        * step holds per token in transformers' batched_mm
                                        * experts (expert weight copies per routed token) */
    uint64_t kv_cache_bytes_per_token; /* one sequence's token, all layers, at the KV dtype
                                        * (per GPU under tp; before sliding-window caps) */
    uint64_t model_states_bytes;    /* per GPU: parameters + gradients + optimizer state
                                     * (training), the weights (inference) */
    uint64_t host_bytes;            /* per node, CPU RAM the model states need (DeepSpeed:
                                     * its estimators' figure with the buffer factor; else
                                     * the offloaded optimizer state, or 0) */
    uint64_t nvme_bytes;            /* per node, what ZeRO-Infinity keeps on NVMe; 0 without */
    uint64_t largest_layer_bytes;   /* the largest unit device_map="auto" keeps on one device
                                     * (a decoder layer, the embedding or the lm_head) in the
                                     * weights' dtype (accelerate's "Largest Layer") */
    uint64_t largest_module_params; /* DeepSpeed's largest_layer_params: the largest module's
                                     * own parameters (ZeRO-3 gathers 2 of them in 16 bits) */
    const char *stage_name;         /* pp > 1: "first", "last" (or "only"): which stage */
    uint64_t stage_layers;          /* layers on that stage */
    uint64_t stage_params;          /* parameters on one GPU of that stage */
    /* Training: what one layer saves for backward for one micro-batch, per GPU -- the
     * same figure the activations in at_peak are built from (x activation_layers). When
     * the model and workload are Korthikanti et al. 2022's (paper_layout: GPT-2 block,
     * GeLU, dropout 0.1, bf16, eager attention) it equals their eq. 1-6 (tested). */
    uint64_t per_layer_activation_bytes;
    int paper_layout;
    /* Layer-activations one GPU holds at the peak: the layers of its pipeline stage x the
     * micro-batches in flight (1F1B: up to pp; interleaved: x (1 + (pp-1)/(pp vpp))). */
    double activation_layers;
    /* What the figures rest on, with where each comes from (static strings). */
    size_t n_assumptions;
    struct { const char *text, *source; } assumptions[OD_MAX_ASSUMPTIONS];
} od_estimate;

/* Defaults: training, batch 1, seq 1024, amp-bf16, AdamW, SDPA, no checkpointing, no
 * parallelism, bf16 inference weights, dynamic KV cache, a 32 MiB cuBLAS workspace. */
void od_workload_defaults(od_workload *w);

/* Estimate one workload. Fails with OD_ERR_ARG when the workload is impossible
 * (zero batch, tp not dividing heads, ...), naming the option. */
od_status od_estimate_compute(const od_model *m, const od_workload *w, od_estimate *out,
                              od_error *err);

/* Names for output ("amp-bf16", "adamw-fused", ...); never NULL. */
const char *od_precision_name(od_precision p);
const char *od_optimizer_name(od_optimizer o);
const char *od_attention_name(od_attention a);
const char *od_ckpt_name(od_ckpt c);
const char *od_weights_name(od_weights w);
const char *od_base_weights_name(od_base_weights b); /* "default", "nf4", "int8", "bf16" */
/* "q,k,v" for OD_LORA_* bits (buf of n bytes; "all-linear" for 0 or all). */
const char *od_lora_targets_text(unsigned targets, char *buf, size_t n);
/* Parse "q,k,v,o,gate,up,down" or "all-linear" into OD_LORA_* bits: 0 and *out, or -1. */
int od_lora_targets_parse(const char *text, unsigned *out);
const char *od_kv_cache_name(od_kv_cache k);
const char *od_fsdp_name(int fsdp); /* "none", "full", "grad-op", "hybrid" */

#endif
