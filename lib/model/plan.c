/* plan.c - max-batch search and ranked mitigations on top of the estimate. */
#include "model/plan.h"

#include "base/mem.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

od_status od_plan_fits(const od_model *m, const od_workload *w, const od_gpu *gpu,
                       uint64_t *device, int *fits, od_error *err)
{
    od_estimate e;
    od_status st = od_estimate_compute(m, w, &e, err);
    if (st != OD_OK)
        return st;
    *device = e.peak_reserved_bytes + gpu->context_bytes;
    *fits = *device <= gpu->memory_bytes;
    return OD_OK;
}

/* Largest batch in [1, 2^20] that fits; memory grows monotonically with the batch, so
 * doubling then bisecting takes ~40 estimates. */
static uint64_t max_batch(const od_model *m, const od_workload *w0, const od_gpu *gpu)
{
    od_workload w = *w0;
    uint64_t dev;
    int fits;
    w.batch = 1;
    if (od_plan_fits(m, &w, gpu, &dev, &fits, NULL) != OD_OK || !fits)
        return 0;
    uint64_t lo = 1, hi = 2;
    for (;;) {
        w.batch = hi;
        if (od_plan_fits(m, &w, gpu, &dev, &fits, NULL) != OD_OK || !fits)
            break;
        lo = hi;
        if (hi >= ((uint64_t)1 << 20))
            return lo;
        hi *= 2;
    }
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        w.batch = mid;
        if (od_plan_fits(m, &w, gpu, &dev, &fits, NULL) == OD_OK && fits)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* Append to buf (n bytes, l used) as printf does; never past the end. */
static void cat(char *buf, size_t n, size_t *l, const char *fmt, ...)
{
    if (*l >= n)
        return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(buf + *l, n - *l, fmt, ap);
    va_end(ap);
    if (k > 0)
        *l += (size_t)k < n - *l ? (size_t)k : n - *l;
}

static const char *offload_name(int o)
{
    return o == OD_OFFLOAD_NVME ? "nvme" : o ? "cpu" : "none";
}

void od_plan_workload_flags(const od_workload *w, char *buf, size_t n)
{
    size_t l = 0;
    if (!n)
        return;
    buf[0] = 0;
    if (w->task == OD_TASK_INFER) {
        cat(buf, n, &l, "--task infer --batch %llu --prompt %llu --new-tokens %llu --weights %s --kv-cache %s%s --tp %llu",
            (unsigned long long)w->batch, (unsigned long long)w->prompt, (unsigned long long)w->new_tokens,
            od_weights_name(w->weights), od_kv_cache_name(w->kv_cache), w->kv_bytes == 1 ? " --kv-dtype fp8" : "",
            (unsigned long long)w->tp);
        return;
    }
    cat(buf, n, &l, "--batch %llu --seq %llu --grad-accum %llu --precision %s --optimizer %s "
        "--attention %s --checkpointing %s%s",
        (unsigned long long)w->batch, (unsigned long long)w->seq, (unsigned long long)w->grad_accum,
        od_precision_name(w->precision), od_optimizer_name(w->optimizer),
        od_attention_name(w->attention), od_ckpt_name(w->ckpt), w->chunked_loss ? " --chunked-loss" : "");
    if (w->offload_optimizer == OD_OFFLOAD_CPU)
        cat(buf, n, &l, " --offload");
    else if (w->offload_optimizer)
        cat(buf, n, &l, " --offload-optimizer %s", offload_name(w->offload_optimizer));
    if (w->zero || w->dp > 1)
        cat(buf, n, &l, " --zero %d --dp %llu", w->zero, (unsigned long long)w->dp);
    if (w->tp > 1)
        cat(buf, n, &l, " --tp %llu%s", (unsigned long long)w->tp, w->sp ? " --sp" : "");
    if (w->cp > 1)
        cat(buf, n, &l, " --cp %llu", (unsigned long long)w->cp);
    if (w->pp > 1)
        cat(buf, n, &l, " --pp %llu", (unsigned long long)w->pp);
    if (w->vpp > 1)
        cat(buf, n, &l, " --vpp %llu", (unsigned long long)w->vpp);
    if (w->first_stage_layers)
        cat(buf, n, &l, " --first-stage-layers %llu", (unsigned long long)w->first_stage_layers);
    if (w->last_stage_layers)
        cat(buf, n, &l, " --last-stage-layers %llu", (unsigned long long)w->last_stage_layers);
    if (w->deepspeed)
        cat(buf, n, &l, " --framework deepspeed%s%s%s", w->offload_params ? " --offload-params " : "",
            w->offload_params ? offload_name(w->offload_params) : "", w->zero_init ? " --zero-init" : "");
    if (w->buffer_factor > 0)
        cat(buf, n, &l, " --buffer-factor %g", w->buffer_factor);
    if (w->megatron)
        cat(buf, n, &l, " --framework megatron");
    if (w->ep > 1)
        cat(buf, n, &l, " --ep %llu", (unsigned long long)w->ep);
    if (w->etp)
        cat(buf, n, &l, " --etp %llu", (unsigned long long)w->etp);
    if (w->main_grads)
        cat(buf, n, &l, " --main-grads %s", w->main_grads == OD_MAIN_GRADS_BF16 ? "bf16" : "fp32");
    if (w->stage)
        cat(buf, n, &l, " --stage %s", w->stage == OD_STAGE_FIRST ? "first" : "last");
    if (w->fsdp)
        cat(buf, n, &l, " --framework fsdp --fsdp %s", od_fsdp_name(w->fsdp));
    if (w->ddp)
        cat(buf, n, &l, " --framework ddp%s", w->ddp_bucket_view ? " --gradient-as-bucket-view" : "");
    if (w->nodes > 1)
        cat(buf, n, &l, " --nodes %llu", (unsigned long long)w->nodes);
    if (w->lora_rank) {
        char t[64];
        cat(buf, n, &l, " --lora-rank %llu", (unsigned long long)w->lora_rank);
        if (w->lora_targets)
            cat(buf, n, &l, " --lora-targets %s", od_lora_targets_text(w->lora_targets, t, sizeof t));
        if (w->base_weights)
            cat(buf, n, &l, " --base-weights %s", od_base_weights_name(w->base_weights));
    }
    if (w->freeze_layers)
        cat(buf, n, &l, " --freeze %llu", (unsigned long long)w->freeze_layers);
}

/* ---- recipes ------------------------------------------------------------------------ */

/* The changes a recipe combines, one row each: what it is, what it costs, what it risks
 * and needs. The compute overheads are rough per-step figures (their text says so). */
typedef enum {
    CH_SDPA, CH_AMP, CH_FUSED, CH_CHUNKED, CH_SELECTIVE, CH_FULL, CH_ADAM8, CH_LORA, CH_QLORA,
    CH_MICRO, CH_OFFLOAD, CH_ZERO1, CH_ZERO2, CH_ZERO3, CH_TP, CH_PP,
    CH_KV8, CH_INT8, CH_INT4, CH_BATCH, N_CHANGES
} change;

static const struct {
    const char *key, *title;     /* title: a %llu takes the change's argument */
    double pct;
    const char *overhead, *risk, *needs, *comm;
} CHANGES[N_CHANGES] = {
    [CH_SDPA] = {"sdpa", "attn_implementation=\"sdpa\" (no seq x seq attention matrix is stored)", -10,
                 "none: SDPA kernels are faster than eager attention", "none", "", ""},
    [CH_AMP] = {"amp-bf16", "bf16 autocast (torch.autocast(\"cuda\", dtype=torch.bfloat16))", -50,
                "none: tensor cores make it faster", "small", "a GPU with bf16 (Ampere or newer)", ""},
    [CH_FUSED] = {"adamw-fused", "AdamW(fused=True)", 0, "none: one fused kernel, no foreach temporaries",
                  "none", "", ""},
    [CH_CHUNKED] = {"chunked-loss", "chunked loss: never materialize the full fp32 logits", 1,
                    "~1%: the lm_head matmul runs in chunks", "none",
                    "a fused linear + cross-entropy (e.g. Liger's) or a chunked loss loop", ""},
    [CH_SELECTIVE] = {"selective-checkpointing", "selective activation checkpointing (recompute attention)", 5,
                      "~2-5%: the attention core is recomputed in backward", "none", "", ""},
    [CH_FULL] = {"full-checkpointing", "full activation checkpointing (gradient_checkpointing_enable(); "
                 "Megatron --recompute-granularity full)", 33,
                 "~33%: one extra forward per step", "none", "", ""},
    [CH_ADAM8] = {"adam8bit", "8-bit AdamW (bitsandbytes AdamW8bit)", 2, "~0-5%", "validate: 8-bit optimizer states",
                  "bitsandbytes", ""},
    [CH_LORA] = {"lora", "LoRA rank %llu on all linear layers (peft) instead of full fine-tuning", 0,
                 "none: the frozen base needs no weight gradients", "validate: trains adapters, not the weights",
                 "peft", ""},
    [CH_QLORA] = {"qlora", "QLoRA: LoRA rank %llu on an NF4 base (bitsandbytes, double quantization)", 25,
                  "~20-30%: the base is dequantized for every matmul", "validate: 4-bit base, adapters only",
                  "peft and bitsandbytes", ""},
    [CH_MICRO] = {"grad-accum", "micro-batch / %llu with that many gradient-accumulation steps (same effective batch)",
                  3, "~0-5%: smaller kernels, same tokens per optimizer step", "none", "", ""},
    [CH_OFFLOAD] = {"offload-optimizer", "optimizer state and step on the CPU", 40,
                    "~20-100%: optimizer step on the CPU, gradients over PCIe", "none",
                    "CPU RAM for the optimizer state (DeepSpeed ZeRO-Offload, FSDP CPU offload, Megatron "
                    "--optimizer-cpu-offload)",
                    "gradients to the host and parameters back every step"},
    [CH_ZERO1] = {"zero1", "ZeRO-1 across %llu GPUs (optimizer state sharded)", 5,
                  "communication overlapped with compute, ~5-15%", "none", "more GPUs (data parallel)",
                  "as DDP: all-reduce of the gradients (2x parameter bytes per step)"},
    [CH_ZERO2] = {"zero2", "ZeRO-2 across %llu GPUs (optimizer state + gradients sharded)", 5,
                  "communication overlapped with compute, ~5-15%", "none", "more GPUs (data parallel)",
                  "as DDP: reduce-scatter of gradients + all-gather of parameters (2x parameter bytes)"},
    [CH_ZERO3] = {"zero3", "ZeRO-3 / FSDP across %llu GPUs (parameters too)", 10,
                  "communication overlapped with compute, ~5-15%", "none", "more GPUs (data parallel)",
                  "1.5x DDP: parameters all-gathered in forward and backward, gradients reduce-scattered"},
    [CH_TP] = {"tensor-parallel", "tensor parallelism over %llu GPUs", 15, "~10-30%: all-reduces in every layer",
               "none", "GPUs with NVLink in one node",
               "2 all-reduces of batch x seq x hidden per layer, forward and backward"},
    [CH_PP] = {"pipeline-parallel", "pipeline parallelism over %llu stages (1F1B)", 20,
               "pipeline bubble (pp-1)/(micro-batches+pp-1) of the step", "none", "more GPUs",
               "activations between stages (batch x seq x hidden per micro-batch)"},
    [CH_KV8] = {"kv-fp8", "8-bit KV cache", 2, "~0-5%", "small: 8-bit KV cache", "a quantized KV cache", ""},
    [CH_INT8] = {"int8-weights", "int8 weights", 20, "~0-40% slower matmuls (LLM.int8)", "small", "bitsandbytes", ""},
    [CH_INT4] = {"int4-weights", "4-bit weights", 10, "~0-20%", "validate: 4-bit weights",
                 "bitsandbytes / GPTQ / AWQ", ""},
    [CH_BATCH] = {"smaller-batch", "batch %llu (the largest that fits)", 0, "lower throughput per call", "none", "", ""},
};

/* One choice of a group: a change and its argument; ch < 0 keeps the workload as it is. */
typedef struct { int ch; uint64_t arg; } choice;

#define MAX_GROUPS 10
#define MAX_CHOICES 8
typedef struct { choice c[MAX_CHOICES]; int n; } group;

typedef struct {
    const od_model *m;
    const od_workload *w0;
    const od_gpu *gpu;
    od_plan *p;
    group g[MAX_GROUPS];
    int ng;
    uint64_t have_gpus;             /* the GPUs the workload runs on now */
    int opt_tiny, grads_tiny;       /* optimizer state (and gradients) under 5% of the peak */
} search;

static void offer(group *g, int ch, uint64_t arg)
{
    if (g->n < MAX_CHOICES)
        g->c[g->n++] = (choice){ch, arg};
}

/* Apply one choice to w (ZeRO, tp, pp take their GPU count from arg). */
static void apply(const search *s, od_workload *w, choice c)
{
    switch (c.ch) {
    case CH_SDPA: w->attention = OD_ATTN_SDPA; break;
    case CH_AMP: w->precision = OD_PREC_AMP_BF16; break;
    case CH_FUSED: w->optimizer = OD_OPT_ADAMW_FUSED; break;
    case CH_CHUNKED: w->chunked_loss = 1; break;
    case CH_SELECTIVE: w->ckpt = OD_CKPT_SELECTIVE; break;
    case CH_FULL: w->ckpt = OD_CKPT_FULL; break;
    case CH_ADAM8: w->optimizer = OD_OPT_ADAM8BIT; break;
    case CH_LORA: w->lora_rank = c.arg; w->lora_targets = 0; break;
    case CH_QLORA: w->lora_rank = c.arg; w->lora_targets = 0; w->base_weights = OD_BASE_NF4; break;
    case CH_MICRO:
        w->batch = (s->w0->batch + c.arg - 1) / c.arg;
        w->grad_accum = s->w0->grad_accum * c.arg;
        break;
    case CH_OFFLOAD: w->offload_optimizer = OD_OFFLOAD_CPU; break;
    case CH_ZERO1: case CH_ZERO2: case CH_ZERO3: {
        int z = c.ch - CH_ZERO1 + 1;
        w->zero = z;
        w->ddp = 0; /* sharding replaces DDP's replicas */
        if (w->fsdp) /* FSDP's own strategies: SHARD_GRAD_OP is ZeRO-2, FULL_SHARD ZeRO-3 */
            w->fsdp = z == 2 ? OD_FSDP_GRAD_OP : w->fsdp == OD_FSDP_HYBRID ? OD_FSDP_HYBRID : OD_FSDP_FULL;
        w->dp = c.arg;
        break;
    }
    case CH_TP: w->tp = c.arg; break;
    case CH_PP:
        w->pp = c.arg;
        if (w->grad_accum < c.arg)
            w->grad_accum = c.arg;
        break;
    case CH_KV8: w->kv_bytes = 1; break;
    case CH_INT8: w->weights = OD_W_INT8; break;
    case CH_INT4: w->weights = OD_W_INT4; break;
    case CH_BATCH: w->batch = c.arg; break;
    default: break;
    }
}

/* The training groups: each a set of alternatives to what the workload does now. */
static void train_groups(search *s)
{
    const od_workload *w = s->w0;
    const od_estimate *e0 = &s->p->estimate;
    /* optimizer state under 5% of the peak (LoRA's adapters): shrinking or moving it
     * cannot be what makes the step fit */
    double peak = (double)e0->peak_allocated_bytes, states = (double)e0->at_peak.optimizer_states;
    double grads = (double)e0->model_states_bytes - (double)e0->at_peak.parameters - states;
    int opt_tiny = s->opt_tiny = states < 0.05 * peak;
    s->grads_tiny = opt_tiny && states + (grads > 0 ? grads : 0) < 0.05 * peak;
    group *g;
    if (w->attention == OD_ATTN_EAGER)
        g = &s->g[s->ng++], g->n = 0, offer(g, -1, 0), offer(g, CH_SDPA, 0);
    if (w->precision == OD_PREC_FP32 && s->gpu->bf16)
        g = &s->g[s->ng++], g->n = 0, offer(g, -1, 0), offer(g, CH_AMP, 0);
    g = &s->g[s->ng++], g->n = 0, offer(g, -1, 0);
    if (w->optimizer == OD_OPT_ADAMW && !w->deepspeed && !w->megatron)
        offer(g, CH_FUSED, 0);
    if (!opt_tiny && (w->optimizer == OD_OPT_ADAMW || w->optimizer == OD_OPT_ADAMW_FUSED) &&
        !w->deepspeed && !w->megatron)
        offer(g, CH_ADAM8, 0);
    if (!w->chunked_loss && !s->m->encoder)
        g = &s->g[s->ng++], g->n = 0, offer(g, -1, 0), offer(g, CH_CHUNKED, 0);
    g = &s->g[s->ng++], g->n = 0, offer(g, -1, 0);
    if (w->ckpt == OD_CKPT_NONE && !w->megatron)
        offer(g, CH_SELECTIVE, 0);
    if (w->ckpt != OD_CKPT_FULL)
        offer(g, CH_FULL, 0);
    if (!w->lora_rank && !w->freeze_layers && !w->deepspeed && !w->megatron && !w->fsdp && !s->m->unet) {
        g = &s->g[s->ng++], g->n = 0, offer(g, -1, 0), offer(g, CH_LORA, 16);
        if (w->precision != OD_PREC_FP32)
            offer(g, CH_QLORA, 16);
    }
    if (w->batch > 1) {
        g = &s->g[s->ng++], g->n = 0, offer(g, -1, 0);
        for (uint64_t k = 2; k <= w->batch && g->n < MAX_CHOICES; k *= 2)
            offer(g, CH_MICRO, k);
    }
    if (!opt_tiny && !w->offload_optimizer)
        g = &s->g[s->ng++], g->n = 0, offer(g, -1, 0), offer(g, CH_OFFLOAD, 0);
}

static void infer_groups(search *s)
{
    const od_workload *w = s->w0;
    group *g;
    if (w->attention == OD_ATTN_EAGER)
        g = &s->g[s->ng++], g->n = 0, offer(g, -1, 0), offer(g, CH_SDPA, 0);
    if (w->kv_cache != OD_KV_NONE && w->kv_bytes != 1)
        g = &s->g[s->ng++], g->n = 0, offer(g, -1, 0), offer(g, CH_KV8, 0);
    /* a quantized checkpoint loads as stored; only towards fewer bits */
    int four = w->weights == OD_W_INT4 || w->weights == OD_W_GPTQ4 || w->weights == OD_W_AWQ4 ||
               w->weights == OD_W_NF4;
    if (!s->m->ckpt_quantized && !four) {
        g = &s->g[s->ng++], g->n = 0, offer(g, -1, 0);
        if (w->weights < OD_W_INT8)
            offer(g, CH_INT8, 0);
        offer(g, CH_INT4, 0);
    }
    if (w->batch > 1) {
        g = &s->g[s->ng++], g->n = 0, offer(g, -1, 0);
        for (uint64_t b = w->batch / 2; b >= 1 && g->n < MAX_CHOICES; b /= 2)
            offer(g, CH_BATCH, b);
    }
}

/* A workload of picks (one choice index per group) plus an optional parallel choice. */
static od_workload compose(const search *s, const int *pick, choice par)
{
    od_workload w = *s->w0;
    for (int i = 0; i < s->ng; i++)
        apply(s, &w, s->g[i].c[pick[i]]);
    apply(s, &w, par);
    return w;
}

static int fits_on(const search *s, const od_workload *w, uint64_t *peak, uint64_t *device)
{
    od_estimate e;
    *peak = *device = 0;
    if (od_estimate_compute(s->m, w, &e, NULL) != OD_OK)
        return -1;
    *peak = e.peak_allocated_bytes;
    *device = e.peak_reserved_bytes + s->gpu->context_bytes;
    return *device <= s->gpu->memory_bytes;
}

static const char *worse_risk(const char *a, const char *b)
{
    int ra = !strncmp(a, "validate", 8) ? 2 : !strncmp(a, "small", 5) ? 1 : 0;
    int rb = !strncmp(b, "validate", 8) ? 2 : !strncmp(b, "small", 5) ? 1 : 0;
    return rb > ra ? b : a;
}

/* Describe the recipe of picks + par into x. */
static void describe(const search *s, const int *pick, choice par, const od_workload *w,
                     uint64_t peak, uint64_t device, int fits, od_mitigation *x)
{
    memset(x, 0, sizeof *x);
    size_t lk = 0, lt = 0, ln = 0, lc = 0, lo = 0;
    const char *risk = "none";
    choice parts[MAX_GROUPS + 1];
    int n = 0;
    for (int i = 0; i < s->ng; i++)
        if (s->g[i].c[pick[i]].ch >= 0)
            parts[n++] = s->g[i].c[pick[i]];
    if (par.ch >= 0)
        parts[n++] = par;
    for (int i = 0; i < n; i++) {
        const char *sep = i ? " + " : "";
        char t[200];
        snprintf(t, sizeof t, CHANGES[parts[i].ch].title, (unsigned long long)parts[i].arg);
        cat(x->key, sizeof x->key, &lk, "%s%s", i ? "+" : "", CHANGES[parts[i].ch].key);
        cat(x->title, sizeof x->title, &lt, "%s%s", sep, t);
        x->overhead_pct += CHANGES[parts[i].ch].pct;
        cat(x->overhead, sizeof x->overhead, &lo, "%s%s", i ? "; " : "", CHANGES[parts[i].ch].overhead);
        risk = worse_risk(risk, CHANGES[parts[i].ch].risk);
        if (CHANGES[parts[i].ch].needs[0] && !strstr(x->needs, CHANGES[parts[i].ch].needs))
            cat(x->needs, sizeof x->needs, &ln, "%s%s", ln ? "; " : "", CHANGES[parts[i].ch].needs);
        if (CHANGES[parts[i].ch].comm[0])
            cat(x->communication, sizeof x->communication, &lc, "%s%s", lc ? "; " : "",
                CHANGES[parts[i].ch].comm);
    }
    snprintf(x->accuracy_risk, sizeof x->accuracy_risk, "%s", risk);
    od_plan_workload_flags(w, x->flags, sizeof x->flags);
    x->peak_allocated_bytes = peak;
    x->device_memory_bytes = device;
    x->fits = fits;
    x->parts = n;
    x->gpus = w->dp * w->tp * w->pp * (w->cp ? w->cp : 1);
    x->more_gpus = x->gpus > s->have_gpus ? x->gpus - s->have_gpus : 0;
    x->workload = *w;
}

/* Order: recipes on the GPUs the workload has before those needing more, then the
 * cheapest compute, the fewest parts, the lowest peak. */
static int by_cost(const void *a, const void *b)
{
    const od_mitigation *x = a, *y = b;
    if ((x->more_gpus > 0) != (y->more_gpus > 0))
        return (x->more_gpus > 0) - (y->more_gpus > 0);
    if (x->overhead_pct != y->overhead_pct)
        return x->overhead_pct < y->overhead_pct ? -1 : 1;
    if (x->parts != y->parts)
        return x->parts - y->parts;
    if (x->peak_allocated_bytes != y->peak_allocated_bytes)
        return x->peak_allocated_bytes < y->peak_allocated_bytes ? -1 : 1;
    return strcmp(x->key, y->key);
}

/* Keep x among the best OD_PLAN_MAX_MITIGATIONS of p (sorted later). */
static void keep(od_plan *p, const od_mitigation *x)
{
    if (p->n_mitigations < OD_PLAN_MAX_MITIGATIONS) {
        p->mitigations[p->n_mitigations++] = *x;
        return;
    }
    size_t worst = 0;
    for (size_t i = 1; i < p->n_mitigations; i++)
        if (by_cost(&p->mitigations[i], &p->mitigations[worst]) > 0)
            worst = i;
    if (by_cost(x, &p->mitigations[worst]) < 0)
        p->mitigations[worst] = *x;
}

/* Mixed-radix walk over every combination of the groups' choices. */
static int next_pick(const search *s, int *pick)
{
    for (int i = 0; i < s->ng; i++) {
        if (++pick[i] < s->g[i].n)
            return 1;
        pick[i] = 0;
    }
    return 0;
}

static size_t pick_index(const search *s, const int *pick)
{
    size_t idx = 0;
    for (int i = s->ng - 1; i >= 0; i--)
        idx = idx * (size_t)s->g[i].n + (size_t)pick[i];
    return idx;
}

static const choice KEEP = {-1, 0};

/* Single-GPU recipes: every combination is estimated once; a fitting one is kept when it
 * is minimal (dropping any of its parts no longer fits). fit[] caches the verdicts. */
static void single_gpu_recipes(search *s, signed char *fit, size_t n_combos, od_mitigation *closest,
                               int *have_closest)
{
    int pick[MAX_GROUPS] = {0};
    uint64_t best = UINT64_MAX;
    do {
        od_workload w = compose(s, pick, KEEP);
        uint64_t peak, dev;
        int f = fits_on(s, &w, &peak, &dev);
        fit[pick_index(s, pick)] = (signed char)f;
        if (f == 0 && peak < best) { /* nothing fits: the nearest is what helps most */
            best = peak;
            describe(s, pick, KEEP, &w, peak, dev, 0, closest);
            *have_closest = 1;
        }
    } while (next_pick(s, pick));
    memset(pick, 0, sizeof pick);
    do {
        if (fit[pick_index(s, pick)] != 1)
            continue;
        int minimal = 1, parts = 0;
        for (int i = 0; i < s->ng && minimal; i++) {
            if (!pick[i])
                continue;
            parts++;
            int keep_i = pick[i];
            pick[i] = 0;
            minimal = fit[pick_index(s, pick)] != 1;
            pick[i] = keep_i;
        }
        if (!minimal || !parts)
            continue;
        od_workload w = compose(s, pick, KEEP);
        uint64_t peak, dev;
        fits_on(s, &w, &peak, &dev);
        od_mitigation x;
        describe(s, pick, KEEP, &w, peak, dev, 1, &x);
        keep(s->p, &x);
    } while (next_pick(s, pick));
    (void)n_combos;
}

/* Recipes with more GPUs: ZeRO-1/2/3 over dp, tensor or pipeline parallelism, at the
 * smallest count (2 .. 64, from the dp it has) that fits, with the combinations that do
 * not fit on their own; kept when no part but the sharding can be dropped. */
static void multi_gpu_recipes(search *s, const signed char *fit)
{
    const od_model *m = s->m;
    const od_workload *w0 = s->w0;
    int kinds[5], nk = 0;
    for (int z = 1; z <= 3; z++)
        if (w0->zero < z && !(w0->megatron && z > 1) && !(w0->fsdp && z == 1) &&
            !(z == 1 && s->opt_tiny) && !(z == 2 && s->grads_tiny))
            kinds[nk++] = CH_ZERO1 + z - 1;
    if (w0->tp == 1 && m->ssm_layers < m->layers)
        kinds[nk++] = CH_TP;
    if (w0->pp == 1 && m->layers > 1)
        kinds[nk++] = CH_PP;
    int pick[MAX_GROUPS] = {0};
    do {
        if (fit[pick_index(s, pick)] == 1)
            continue;
        for (int k = 0; k < nk; k++) {
            uint64_t start = kinds[k] <= CH_ZERO3 && w0->dp > 1 ? w0->dp : 2;
            for (uint64_t n = start; n <= 64; n *= 2) {
                if (kinds[k] == CH_TP && (m->heads % n || m->kv_heads % n))
                    break;
                if (kinds[k] == CH_PP && n > m->layers)
                    break;
                choice par = {kinds[k], n};
                od_workload w = compose(s, pick, par);
                uint64_t peak, dev;
                int f = fits_on(s, &w, &peak, &dev);
                if (f < 0)
                    break;
                if (!f)
                    continue;
                /* minimal: no other part can go at this count */
                int minimal = 1;
                for (int i = 0; i < s->ng && minimal; i++) {
                    if (!pick[i])
                        continue;
                    int keep_i = pick[i];
                    pick[i] = 0;
                    od_workload w2 = compose(s, pick, par);
                    uint64_t p2, d2;
                    minimal = fits_on(s, &w2, &p2, &d2) != 1;
                    pick[i] = keep_i;
                }
                if (minimal) {
                    od_mitigation x;
                    describe(s, pick, par, &w, peak, dev, 1, &x);
                    keep(s->p, &x);
                }
                break;
            }
        }
    } while (next_pick(s, pick));
}

/* The workload fits: the three cheapest single changes that lower its peak. */
static void single_changes(search *s)
{
    od_plan *p = s->p;
    for (int i = 0; i < s->ng; i++) {
        for (int c = 1; c < s->g[i].n; c++) {
            if (s->g[i].c[c].ch == CH_BATCH) /* it fits: a smaller batch is no change to make */
                continue;
            int pick[MAX_GROUPS] = {0};
            pick[i] = c;
            od_workload w = compose(s, pick, KEEP);
            uint64_t peak, dev;
            int f = fits_on(s, &w, &peak, &dev);
            if (f < 0 || peak >= p->estimate.peak_allocated_bytes)
                continue;
            od_mitigation x;
            describe(s, pick, KEEP, &w, peak, dev, f, &x);
            keep(p, &x);
        }
    }
    od_sort(p->mitigations, p->n_mitigations, sizeof p->mitigations[0], by_cost);
    if (p->n_mitigations > 3)
        p->n_mitigations = 3;
}

od_status od_plan_compute(const od_model *m, const od_workload *w, const od_gpu *gpu,
                          od_plan *out, od_error *err)
{
    memset(out, 0, sizeof *out);
    od_status st = od_estimate_compute(m, w, &out->estimate, err);
    if (st != OD_OK)
        return st;
    out->cuda_context_bytes = gpu->context_bytes;
    out->device_memory_bytes = out->estimate.peak_reserved_bytes + gpu->context_bytes;
    out->target_bytes = gpu->memory_bytes;
    out->fits = out->device_memory_bytes <= gpu->memory_bytes;
    out->max_batch = max_batch(m, w, gpu);
    search *s = calloc(1, sizeof *s);
    if (!s)
        return od_fail(err, OD_ERR_NOMEM, "out of memory planning the recipes");
    s->m = m;
    s->w0 = w;
    s->gpu = gpu;
    s->p = out;
    s->have_gpus = w->dp * w->tp * w->pp * (w->cp ? w->cp : 1);
    if (w->task == OD_TASK_TRAIN)
        train_groups(s);
    else
        infer_groups(s);
    if (out->fits) {
        single_changes(s);
        free(s);
        return OD_OK;
    }
    size_t n_combos = 1;
    for (int i = 0; i < s->ng; i++)
        n_combos *= (size_t)s->g[i].n;
    signed char *fit = calloc(n_combos, 1);
    if (!fit) {
        free(s);
        return od_fail(err, OD_ERR_NOMEM, "out of memory planning the recipes");
    }
    od_mitigation closest;
    int have_closest = 0;
    single_gpu_recipes(s, fit, n_combos, &closest, &have_closest);
    if (w->task == OD_TASK_TRAIN)
        multi_gpu_recipes(s, fit);
    else if (w->tp == 1) { /* inference: tensor parallelism over 2, 4, 8 GPUs */
        int pick[MAX_GROUPS] = {0};
        for (uint64_t n = 2; n <= 8; n *= 2) {
            if (m->heads % n || (m->kv_heads % n && n % m->kv_heads))
                break;
            choice par = {CH_TP, n};
            od_workload t = compose(s, pick, par);
            uint64_t peak, dev;
            if (fits_on(s, &t, &peak, &dev) == 1) {
                od_mitigation x;
                describe(s, pick, par, &t, peak, dev, 1, &x);
                keep(out, &x);
                break;
            }
        }
    }
    free(fit);
    od_sort(out->mitigations, out->n_mitigations, sizeof out->mitigations[0], by_cost);
    if (!out->n_mitigations && have_closest) {
        out->closest = closest;
        out->has_closest = 1;
    }
    free(s);
    return OD_OK;
}

void od_vllm_config_defaults(od_vllm_config *c)
{
    memset(c, 0, sizeof *c);
    c->gpu_memory_utilization = 0.9;
    c->block_size = 16;
    c->entry = OD_VLLM_SERVE;
    c->pp = 1;
}

void od_vllm_defaults_for(const od_gpu *gpu, od_vllm_entry entry, uint64_t *batched_tokens,
                          uint64_t *num_seqs)
{
    /* arg_utils.py @ 99d7eb5: device_memory >= 70 GiB and "a100" not in the device name
     * (a large budget lowers an A100's throughput, PR #17885) */
    char name[160];
    size_t k = 0;
    for (const char *p = gpu->description; *p && k + 1 < sizeof name; p++)
        name[k++] = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
    name[k] = 0;
    int big = gpu->memory_bytes >= ((uint64_t)70 << 30) && !strstr(name, "a100") &&
              strncmp(gpu->name, "a100", 4);
    if (big) {
        *batched_tokens = entry == OD_VLLM_LLM ? 16384 : 8192;
        *num_seqs = 1024;
    } else {
        *batched_tokens = entry == OD_VLLM_LLM ? 8192 : 2048;
        *num_seqs = 256;
    }
}

/* Layers on vLLM pipeline stage r of pp: L/pp each, the remainder one each to the stages
 * before the last, from the second-to-last back (vllm/distributed/utils.py get_pp_indices
 * @ 5a6541d). */
static uint64_t vllm_stage_layers(uint64_t L, uint64_t r, uint64_t pp)
{
    uint64_t n = L / pp, rem = L % pp;
    /* partitions[-i] += 1 for i in 2 .. rem + 1: stages pp-2, pp-3, ..., pp-1-rem */
    if (rem && r + 1 < pp && r + 1 + rem >= pp)
        n++;
    return n;
}

static uint64_t cdiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

/* Blocks one request of max_model_len needs in a layer of each kind (kv_cache_interface.py
 * @ 001cabc: FullAttentionSpec cdiv(len, bs); SlidingWindowSpec.max_memory_usage_bytes
 * cdiv(min(window - 1 + max_num_batched_tokens, len), bs) + 1; ChunkedLocalAttentionSpec
 * cdiv(min(chunk + max_num_batched_tokens, len), bs)). */
typedef struct { uint64_t full, sliding, chunked; } per_kind;

static per_kind request_blocks(const od_model *m, const od_vllm_config *c, uint64_t T)
{
    uint64_t L = c->max_model_len, bs = c->block_size;
    per_kind b = {cdiv(L, bs), 0, 0};
    if (m->sliding_window) {
        uint64_t n = m->sliding_window - 1 + T;
        b.sliding = cdiv(n < L ? n : L, bs) + 1;
    }
    if (m->attention_chunk) {
        uint64_t n = m->attention_chunk + T;
        b.chunked = cdiv(n < L ? n : L, bs);
    }
    return b;
}

/* The KV-cache groups of one stage with f full, s sliding, k chunked layers, as V1 forms
 * them (kv_cache_utils.py _get_kv_cache_groups_uniform_page_size): one type, one group of
 * all its layers; several, groups of the fewest type's count (the most's when under 1.5 x
 * the fewest), cdiv(n, size) groups of each type. Fills the group size, the group count
 * and the blocks a request takes over all groups. */
static void kv_groups(uint64_t f, uint64_t s, uint64_t k, per_kind b, uint64_t *size,
                      uint64_t *groups, uint64_t *per_seq)
{
    uint64_t n[3] = {f, s, k}, blocks[3] = {b.full, b.sliding, b.chunked};
    uint64_t lo = 0, hi = 0, types = 0;
    for (int i = 0; i < 3; i++) {
        if (!n[i])
            continue;
        types++;
        lo = !lo || n[i] < lo ? n[i] : lo;
        hi = n[i] > hi ? n[i] : hi;
    }
    *size = types <= 1 ? hi : (double)hi < 1.5 * (double)lo ? hi : lo;
    *groups = *per_seq = 0;
    for (int i = 0; i < 3 && *size; i++) {
        if (!n[i])
            continue;
        uint64_t g = types <= 1 ? 1 : cdiv(n[i], *size);
        *groups += g;
        *per_seq += g * blocks[i];
    }
}

/* Weights on one GPU of stage r: its layers' share, the embedding on the first (and on
 * the last when tied: vLLM's LlamaModel builds embed_tokens there for the tied lm_head),
 * the final norm and lm_head on the last. */
static double vllm_stage_weights(const od_model *m, const od_param_counts *pc, double weights,
                                 double wb, uint64_t Ls, int first, int last, uint64_t pp,
                                 uint64_t tp)
{
    if (pp < 2)
        return weights;
    double emb = (double)pc->embedding * wb / (double)tp;
    double head = (double)pc->head * wb / (double)tp;
    double layers = weights - emb - head;
    double wgt = layers * (double)Ls / (double)m->layers;
    if (first || (last && m->tied_embeddings))
        wgt += emb;
    if (last)
        wgt += head;
    return wgt;
}

od_status od_plan_vllm(const od_model *m, const od_workload *w, const od_gpu *gpu,
                       const od_vllm_config *cfg, od_vllm_plan *out, od_error *err)
{
    if (!(cfg->gpu_memory_utilization > 0 && cfg->gpu_memory_utilization <= 1))
        return od_fail(err, OD_ERR_ARG, "--gpu-memory-utilization must be in (0, 1]");
    if (!cfg->max_model_len || !cfg->block_size)
        return od_fail(err, OD_ERR_ARG, "--max-model-len and --block-size must be at least 1");
    if (m->encoder)
        return od_fail(err, OD_ERR_ARG, "vLLM serves decoders; %s is an encoder", m->model_type);
    if (m->ssm_layers)
        return od_fail(err, OD_ERR_ARG, "--engine vllm: the Mamba layers' state (V1's MambaSpec, "
                       "padded to the attention page) is not modelled for %s", m->model_type);
    uint64_t pp = cfg->pp ? cfg->pp : 1;
    if (pp > m->layers)
        return od_fail(err, OD_ERR_ARG, "--pp %llu exceeds the %llu layers", (unsigned long long)pp,
                       (unsigned long long)m->layers);
    /* vLLM splits the attention heads over tp and copies KV heads when tp outnumbers them
     * (config/model.py get_num_kv_heads: max(1, kv_heads // tp); 1 for MLA) */
    uint64_t tp = w->tp ? w->tp : 1;
    if (m->heads % tp || (m->kv_heads % tp && tp % m->kv_heads))
        return od_fail(err, OD_ERR_ARG, "--tp %llu: vLLM needs it to divide the %llu attention heads "
                       "and to divide or be a multiple of the %llu KV heads", (unsigned long long)tp,
                       (unsigned long long)m->heads, (unsigned long long)m->kv_heads);
    memset(out, 0, sizeof *out);
    uint64_t T = cfg->max_num_batched_tokens, seqs = cfg->max_num_seqs, dT, dS;
    od_vllm_defaults_for(gpu, cfg->entry, &dT, &dS);
    if (!T)
        T = dT;
    if (!seqs)
        seqs = dS < T ? dS : T;
    out->max_num_batched_tokens = T;
    out->max_num_seqs = seqs;
    /* the profiling run: one dummy forward of the batched tokens, no KV cache; logits only
     * for each scheduled sequence's last token (fp32 in the sampler) */
    od_workload p = *w;
    p.task = OD_TASK_INFER;
    p.batch = 1;
    p.prompt = T;
    p.new_tokens = 1;
    p.kv_cache = OD_KV_NONE;
    od_estimate e;
    od_status st = od_estimate_compute(m, &p, &e, err);
    if (st != OD_OK)
        return st;
    od_param_counts pc;
    od_model_count(m, &pc);
    double sampler = (double)seqs * (double)m->vocab * 4 / (double)tp;
    double act = (double)e.peak_allocated_bytes - (double)e.at_peak.parameters -
                 (double)e.at_peak.logits_and_loss - (double)e.at_peak.kv_cache;
    double wb = w->weights == OD_W_FP32 ? 4 : 2; /* embeddings and lm_head stay 16-bit */
    out->budget_bytes = (uint64_t)(cfg->gpu_memory_utilization * (double)gpu->memory_bytes);
    out->quantized_params = e.quantized_params;
    out->non_torch_bytes = gpu->context_bytes;
    out->kv_heads_per_gpu = m->kv_lora_rank ? 1 : (m->kv_heads / tp ? m->kv_heads / tp : 1);
    out->kv_replicated = !m->kv_lora_rank && tp > m->kv_heads;
    double kvb = w->kv_bytes ? w->kv_bytes : w->weights == OD_W_FP32 ? 4 : 2;
    double page = m->kv_lora_rank ? (double)(m->kv_lora_rank + m->qk_rope_dim) * kvb
                                  : 2.0 * (double)out->kv_heads_per_gpu * (double)m->head_dim * kvb;
    out->page_bytes = (uint64_t)(page * (double)cfg->block_size + 0.5);
    if (!out->page_bytes)
        return od_fail(err, OD_ERR_ARG, "this model caches nothing per token");
    per_kind rb = request_blocks(m, cfg, T);
    out->num_blocks = UINT64_MAX;
    uint64_t first_layer = 0;
    for (uint64_t r = 0; r < pp; first_layer += vllm_stage_layers(m->layers, r, pp), r++) {
        uint64_t Ls = vllm_stage_layers(m->layers, r, pp);
        double L = (double)m->layers;
        uint64_t s = m->sliding_window && !cfg->disable_hybrid
                         ? (uint64_t)((double)m->sliding_layers * Ls / L + 0.5) : 0;
        uint64_t k = m->attention_chunk && !cfg->disable_hybrid
                         ? (uint64_t)((double)m->chunked_layers * Ls / L + 0.5) : 0;
        if (m->sliding_window && m->sliding_layers == m->layers && !cfg->disable_hybrid)
            s = Ls; /* every layer slides: one uniform SlidingWindowSpec group */
        uint64_t f = Ls - s - k, size, groups, per_seq;
        kv_groups(f, s, k, rb, &size, &groups, &per_seq);
        double wgt = vllm_stage_weights(m, &pc, (double)e.at_peak.parameters, wb, Ls, r == 0,
                                        r + 1 == pp, pp, tp);
        double a = act + (r + 1 == pp ? sampler : 0);
        double kv = cfg->kv_cache_memory_bytes ? (double)cfg->kv_cache_memory_bytes
                                               : (double)out->budget_bytes - wgt - a - (double)gpu->context_bytes;
        uint64_t kvu = kv > 0 ? (uint64_t)kv : 0;
        uint64_t blocks = size ? kvu / out->page_bytes / size : 0;
        if (blocks < out->num_blocks) {
            out->num_blocks = blocks;
            out->weights_bytes = (uint64_t)(wgt + 0.5);
            out->activation_bytes = a > 0 ? (uint64_t)a : 0;
            out->kv_cache_bytes = kvu;
            out->stage_layers = Ls;
            out->group_size = size;
            out->n_groups = groups;
            out->blocks_per_seq = per_seq;
            out->block_bytes = out->page_bytes * size;
            out->hybrid = (f != 0) + (s != 0) + (k != 0) > 1 ||
                          (cfg->disable_hybrid && (m->sliding_window || m->attention_chunk) &&
                           m->sliding_layers < m->layers);
            if (out->hybrid) { /* the other manager: all as full attention, or grouped */
                uint64_t s2 = cfg->disable_hybrid ? (uint64_t)((double)m->sliding_layers * Ls / L + 0.5) : 0;
                uint64_t k2 = cfg->disable_hybrid && m->attention_chunk
                                  ? (uint64_t)((double)m->chunked_layers * Ls / L + 0.5) : 0;
                uint64_t size2, groups2, per2;
                kv_groups(Ls - s2 - k2, s2, k2, rb, &size2, &groups2, &per2);
                out->alt_num_blocks = size2 ? kvu / out->page_bytes / size2 : 0;
                out->alt_blocks_per_seq = per2;
                out->alt_max_concurrency = per2 ? (double)out->alt_num_blocks / (double)per2 : 0;
            }
        }
    }
    (void)first_layer;
    out->max_concurrent_seqs = out->blocks_per_seq ? out->num_blocks / out->blocks_per_seq : 0;
    out->max_concurrency = out->blocks_per_seq ? (double)out->num_blocks / (double)out->blocks_per_seq : 0;
    out->fits = out->max_concurrent_seqs >= 1;
    if (!cfg->enforce_eager) {
        /* CUDA graphs for batch sizes up to min(2 x max_num_seqs, 512), captured largest
         * first into one shared pool: the intermediates of a forward of the largest */
        uint64_t cap = 2 * seqs < 512 ? 2 * seqs : 512;
        od_workload g = p;
        g.prompt = cap;
        od_estimate ge;
        if (od_estimate_compute(m, &g, &ge, NULL) == OD_OK)
            out->cuda_graph_bytes = ge.at_peak.activations + ge.at_peak.temporaries;
    }
    out->device_bytes = (cfg->kv_cache_memory_bytes
                             ? out->weights_bytes + out->activation_bytes + out->non_torch_bytes +
                                   out->kv_cache_bytes
                             : out->budget_bytes) + out->cuda_graph_bytes;
    return OD_OK;
}
