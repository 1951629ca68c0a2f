/* plan.c - max-batch search and ranked mitigations on top of the estimate. */
#include "model/plan.h"

#include "base/mem.h"

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

void od_plan_workload_flags(const od_workload *w, char *buf, size_t n)
{
    if (w->task == OD_TASK_INFER) {
        snprintf(buf, n, "--task infer --batch %llu --prompt %llu --new-tokens %llu --weights %s --kv-cache %s%s --tp %llu",
                 (unsigned long long)w->batch, (unsigned long long)w->prompt, (unsigned long long)w->new_tokens,
                 od_weights_name(w->weights), od_kv_cache_name(w->kv_cache), w->kv_bytes == 1 ? " --kv-dtype fp8" : "",
                 (unsigned long long)w->tp);
        return;
    }
    snprintf(buf, n, "--batch %llu --seq %llu --grad-accum %llu --precision %s --optimizer %s "
             "--attention %s --checkpointing %s%s%s",
             (unsigned long long)w->batch, (unsigned long long)w->seq, (unsigned long long)w->grad_accum,
             od_precision_name(w->precision), od_optimizer_name(w->optimizer),
             od_attention_name(w->attention), od_ckpt_name(w->ckpt),
             w->chunked_loss ? " --chunked-loss" : "", w->offload_optimizer ? " --offload" : "");
    size_t l = strlen(buf);
    if (w->zero || w->dp > 1)
        l += (size_t)snprintf(buf + l, n > l ? n - l : 0, " --zero %d --dp %llu", w->zero,
                              (unsigned long long)w->dp);
    if (w->tp > 1 && l < n)
        l += (size_t)snprintf(buf + l, n - l, " --tp %llu%s", (unsigned long long)w->tp,
                              w->sp ? " --sp" : "");
    if (w->cp > 1 && l < n)
        l += (size_t)snprintf(buf + l, n - l, " --cp %llu", (unsigned long long)w->cp);
    if (w->pp > 1 && l < n)
        l += (size_t)snprintf(buf + l, n - l, " --pp %llu", (unsigned long long)w->pp);
    if (w->vpp > 1 && l < n)
        l += (size_t)snprintf(buf + l, n - l, " --vpp %llu", (unsigned long long)w->vpp);
    if (w->deepspeed && l < n)
        l += (size_t)snprintf(buf + l, n - l, " --framework deepspeed%s%s",
                              w->offload_params ? " --offload-params cpu" : "",
                              w->zero_init ? " --zero-init" : "");
    if (w->fsdp && l < n)
        l += (size_t)snprintf(buf + l, n - l, " --framework fsdp --fsdp %s", od_fsdp_name(w->fsdp));
    if (w->ddp && l < n)
        l += (size_t)snprintf(buf + l, n - l, " --framework ddp%s",
                              w->ddp_bucket_view ? " --gradient-as-bucket-view" : "");
    if (w->nodes > 1 && l < n)
        l += (size_t)snprintf(buf + l, n - l, " --nodes %llu", (unsigned long long)w->nodes);
    if (w->lora_rank && l < n) {
        char t[64];
        l += (size_t)snprintf(buf + l, n - l, " --lora-rank %llu", (unsigned long long)w->lora_rank);
        if (w->lora_targets && l < n)
            l += (size_t)snprintf(buf + l, n - l, " --lora-targets %s",
                                  od_lora_targets_text(w->lora_targets, t, sizeof t));
        if (w->base_weights && l < n)
            l += (size_t)snprintf(buf + l, n - l, " --base-weights %s",
                                  od_base_weights_name(w->base_weights));
    }
    if (w->freeze_layers && l < n)
        snprintf(buf + l, n - l, " --freeze %llu", (unsigned long long)w->freeze_layers);
}

typedef struct {
    const od_model *m;
    const od_gpu *gpu;
    od_plan *p;
} adder;

static void add(adder *a, const char *key, const od_workload *w, double overhead_pct,
                const char *overhead, const char *risk, const char *needs, const char *comm,
                const char *title_fmt, unsigned long long arg)
{
    od_plan *p = a->p;
    if (p->n_mitigations >= OD_PLAN_MAX_MITIGATIONS)
        return;
    od_estimate e;
    if (od_estimate_compute(a->m, w, &e, NULL) != OD_OK)
        return;
    /* a change that does not lower the peak is no mitigation */
    if (e.peak_allocated_bytes >= p->estimate.peak_allocated_bytes)
        return;
    od_mitigation *x = &p->mitigations[p->n_mitigations++];
    memset(x, 0, sizeof *x);
    x->key = key;
    snprintf(x->title, sizeof x->title, title_fmt, arg);
    od_plan_workload_flags(w, x->flags, sizeof x->flags);
    x->overhead_pct = overhead_pct;
    x->overhead = overhead;
    x->accuracy_risk = risk;
    x->needs = needs;
    x->communication = comm;
    x->peak_allocated_bytes = e.peak_allocated_bytes;
    x->device_memory_bytes = e.peak_reserved_bytes + a->gpu->context_bytes;
    x->fits = x->device_memory_bytes <= a->gpu->memory_bytes;
    x->workload = *w;
}

/* Smallest n in {2, 4, ..., 64} GPUs (along axis 'd'p, 't'p or 'p'p) for which the
 * changed workload fits; 64 when none does. */
static uint64_t smallest_fitting(const od_model *m, const od_workload *w, const od_gpu *gpu,
                                 char axis)
{
    for (uint64_t n = 2; n <= 64; n *= 2) {
        od_workload t = *w;
        uint64_t dev;
        int fits;
        if (axis == 'd')
            t.dp = n;
        else if (axis == 't')
            t.tp = n;
        else
            t.pp = n;
        if (od_plan_fits(m, &t, gpu, &dev, &fits, NULL) == OD_OK && fits)
            return n;
    }
    return 64;
}

static void train_mitigations(adder *a, const od_workload *w0)
{
    const od_model *m = a->m;
    od_workload w;
    /* Optimizer state under 5% of the peak (LoRA's adapters): shrinking or sharding it
     * cannot be what makes the step fit, so those changes are not offered. */
    const od_estimate *e0 = &a->p->estimate;
    double peak = (double)e0->peak_allocated_bytes;
    double states = (double)e0->at_peak.optimizer_states;
    double grads = (double)e0->model_states_bytes - (double)e0->at_peak.parameters - states;
    int opt_tiny = states < 0.05 * peak;
    int grads_tiny = opt_tiny && states + (grads > 0 ? grads : 0) < 0.05 * peak;
    if (w0->attention == OD_ATTN_EAGER) {
        w = *w0;
        w.attention = OD_ATTN_SDPA;
        add(a, "sdpa", &w, -10, "none: SDPA kernels are faster than eager attention", "none", "",
            "", "attn_implementation=\"sdpa\" (no seq x seq attention matrix is stored)", 0);
    }
    if (w0->precision == OD_PREC_FP32) {
        w = *w0;
        w.precision = OD_PREC_AMP_BF16;
        add(a, "amp-bf16", &w, -50, "none: tensor cores make it faster", "small",
            "a GPU with bf16 (Ampere or newer)", "",
            "bf16 autocast (torch.autocast(\"cuda\", dtype=torch.bfloat16))", 0);
    }
    if (w0->optimizer == OD_OPT_ADAMW) {
        w = *w0;
        w.optimizer = OD_OPT_ADAMW_FUSED;
        add(a, "adamw-fused", &w, 0, "none: one fused kernel, no foreach temporaries", "none",
            "", "", "AdamW(fused=True)", 0);
    }
    if (!w0->chunked_loss) {
        w = *w0;
        w.chunked_loss = 1;
        add(a, "chunked-loss", &w, 1, "~1%: the lm_head matmul runs in chunks", "none",
            "a fused linear + cross-entropy (e.g. Liger's) or a chunked loss loop", "",
            "chunked loss: never materialize the full fp32 logits", 0);
    }
    if (w0->batch > 1) {
        for (uint64_t k = 2; k <= w0->batch; k *= 2) {
            w = *w0;
            w.batch = (w0->batch + k - 1) / k;
            w.grad_accum = w0->grad_accum * k;
            uint64_t dev;
            int fits;
            if ((od_plan_fits(m, &w, a->gpu, &dev, &fits, NULL) == OD_OK && fits) ||
                w.batch == 1) {
                add(a, "grad-accum", &w, 3,
                    "~0-5%: smaller kernels, same tokens per optimizer step", "none", "", "",
                    "micro-batch / %llu with that many gradient-accumulation steps "
                    "(same effective batch)", (unsigned long long)k);
                break;
            }
        }
    }
    if (w0->ckpt == OD_CKPT_NONE) {
        w = *w0;
        w.ckpt = OD_CKPT_SELECTIVE;
        add(a, "selective-checkpointing", &w, 5,
            "~2-5%: the attention core is recomputed in backward", "none", "", "",
            "selective activation checkpointing (recompute attention)", 0);
    }
    if (w0->ckpt != OD_CKPT_FULL) {
        w = *w0;
        w.ckpt = OD_CKPT_FULL;
        add(a, "full-checkpointing", &w, 33, "~33%: one extra forward per step", "none", "", "",
            "full activation checkpointing (model.gradient_checkpointing_enable())", 0);
    }
    if (!opt_tiny && w0->optimizer != OD_OPT_ADAM8BIT && w0->optimizer != OD_OPT_PAGED_ADAM8BIT &&
        w0->optimizer != OD_OPT_SGD_NOMOM) {
        w = *w0;
        w.optimizer = OD_OPT_ADAM8BIT;
        add(a, "adam8bit", &w, 2, "~0-5%", "validate: 8-bit optimizer states",
            "bitsandbytes", "", "8-bit AdamW (bitsandbytes AdamW8bit)", 0);
    }
    if (!opt_tiny && w0->optimizer != OD_OPT_ADAFACTOR && w0->optimizer != OD_OPT_SGD_NOMOM) {
        w = *w0;
        w.optimizer = OD_OPT_ADAFACTOR;
        add(a, "adafactor", &w, 2, "~0-5%", "validate: factored second moment, no momentum", "",
            "", "Adafactor (torch.optim.Adafactor)", 0);
    }
    if (!opt_tiny && !w0->offload_optimizer) {
        w = *w0;
        w.offload_optimizer = 1;
        add(a, "offload-optimizer", &w, 40,
            "~20-100%: optimizer step on the CPU, gradients over PCIe", "none",
            "CPU RAM for the optimizer state (DeepSpeed ZeRO-Offload / FSDP CPU offload)",
            "gradients to the host and parameters back every step",
            "optimizer state and step on the CPU", 0);
    }
    static const char *const zkeys[] = {"", "zero1", "zero2", "zero3"};
    static const char *const zcomm[] = {
        "", "as DDP: all-reduce of the gradients (2x parameter bytes per step)",
        "as DDP: reduce-scatter of gradients + all-gather of parameters (2x parameter bytes)",
        "1.5x DDP: parameters all-gathered in forward and backward, gradients reduce-scattered"};
    static const char *const ztitle[] = {
        "", "ZeRO-1 across %llu GPUs (optimizer state sharded)",
        "ZeRO-2 across %llu GPUs (optimizer state + gradients sharded)",
        "ZeRO-3 / FSDP across %llu GPUs (parameters too)"};
    for (int z = 1; z <= 3; z++) {
        if (w0->zero >= z || (z == 1 && opt_tiny) || (z == 2 && grads_tiny))
            continue;
        w = *w0;
        w.zero = z;
        w.ddp = 0; /* sharding replaces DDP's replicas */
        if (w.fsdp) { /* FSDP's own strategies: SHARD_GRAD_OP is ZeRO-2, FULL_SHARD ZeRO-3 */
            if (z == 1)
                continue;
            w.fsdp = z == 2 ? OD_FSDP_GRAD_OP : w.fsdp == OD_FSDP_HYBRID ? OD_FSDP_HYBRID : OD_FSDP_FULL;
        }
        uint64_t n = smallest_fitting(m, &w, a->gpu, 'd');
        w.dp = n;
        add(a, zkeys[z], &w, z == 3 ? 10 : 5, "communication overlapped with compute, ~5-15%",
            "none", "more GPUs (data parallel)", zcomm[z], ztitle[z], (unsigned long long)n);
    }
    if (w0->tp == 1) {
        w = *w0;
        uint64_t n = smallest_fitting(m, &w, a->gpu, 't');
        while (n > 1 && (m->heads % n || m->kv_heads % n))
            n /= 2;
        if (n > 1) {
            w.tp = n;
            add(a, "tensor-parallel", &w, 15, "~10-30%: all-reduces in every layer", "none",
                "GPUs with NVLink in one node",
                "2 all-reduces of batch x seq x hidden per layer, forward and backward",
                "tensor parallelism over %llu GPUs", (unsigned long long)n);
        }
    }
    if (w0->pp == 1 && m->layers > 1) {
        w = *w0;
        uint64_t n = smallest_fitting(m, &w, a->gpu, 'p');
        if (n > m->layers)
            n = m->layers;
        w.pp = n;
        if (w.grad_accum < n)
            w.grad_accum = n;
        add(a, "pipeline-parallel", &w, 20,
            "pipeline bubble (pp-1)/(micro-batches+pp-1) of the step", "none", "more GPUs",
            "activations between stages (batch x seq x hidden per micro-batch)",
            "pipeline parallelism over %llu stages (1F1B)", (unsigned long long)n);
    }
}

static void infer_mitigations(adder *a, const od_workload *w0)
{
    od_workload w;
    if (w0->attention == OD_ATTN_EAGER) {
        w = *w0;
        w.attention = OD_ATTN_SDPA;
        add(a, "sdpa", &w, -10, "none: faster", "none", "", "",
            "attn_implementation=\"sdpa\"", 0);
    }
    if (w0->kv_cache != OD_KV_NONE && w0->kv_bytes != 1) {
        w = *w0;
        w.kv_bytes = 1;
        add(a, "kv-fp8", &w, 2, "~0-5%", "small: 8-bit KV cache", "a quantized KV cache", "",
            "8-bit KV cache", 0);
    }
    /* a quantized checkpoint loads as stored: requantizing it is no change */
    /* only towards fewer bits: 16/32-bit -> int8 -> 4-bit (fp8 is already 8-bit) */
    int four = w0->weights == OD_W_INT4 || w0->weights == OD_W_GPTQ4 || w0->weights == OD_W_AWQ4 ||
               w0->weights == OD_W_NF4;
    if (!a->m->ckpt_quantized && w0->weights < OD_W_INT8) {
        w = *w0;
        w.weights = OD_W_INT8;
        add(a, "int8-weights", &w, 20, "~0-40% slower matmuls (LLM.int8)", "small",
            "bitsandbytes", "", "int8 weights", 0);
    }
    if (!a->m->ckpt_quantized && !four) {
        w = *w0;
        w.weights = OD_W_INT4;
        add(a, "int4-weights", &w, 10, "~0-20%", "validate: 4-bit weights",
            "bitsandbytes / GPTQ / AWQ", "", "4-bit weights", 0);
    }
    if (w0->batch > 1) {
        uint64_t mb = max_batch(a->m, w0, a->gpu);
        if (mb >= 1 && mb < w0->batch) {
            w = *w0;
            w.batch = mb;
            add(a, "smaller-batch", &w, 0, "lower throughput per call", "none", "", "",
                "batch %llu (the largest that fits)", (unsigned long long)mb);
        }
    }
    if (w0->tp == 1) {
        w = *w0;
        w.tp = 2;
        add(a, "tensor-parallel", &w, 10, "~5-15%: all-reduces in every layer", "none",
            "2 GPUs", "2 all-reduces of batch x hidden per layer and token",
            "tensor parallelism over %llu GPUs", 2);
    }
}

/* Copy into dst every setting in which the mitigation m differs from base. */
static void merge(od_workload *dst, const od_workload *base, const od_workload *m)
{
#define TAKE(f) if (m->f != base->f) dst->f = m->f
    TAKE(batch); TAKE(precision); TAKE(optimizer); TAKE(attention); TAKE(ckpt);
    TAKE(zero); TAKE(dp); TAKE(tp); TAKE(pp); TAKE(chunked_loss);
    TAKE(offload_optimizer); TAKE(weights); TAKE(kv_bytes);
    if (m->grad_accum != base->grad_accum && m->grad_accum > dst->grad_accum)
        dst->grad_accum = m->grad_accum;
#undef TAKE
}

/* When no single change fits: stack them cheapest first, each kept only if it lowers
 * the peak, until the workload fits. */
static void combined(adder *a, const od_workload *w0)
{
    od_plan *p = a->p;
    for (size_t i = 0; i < p->n_mitigations; i++)
        if (p->mitigations[i].fits)
            return;
    od_workload cur = *w0;
    od_estimate e;
    if (od_estimate_compute(a->m, &cur, &e, NULL) != OD_OK)
        return;
    uint64_t best = e.peak_allocated_bytes;
    double overhead = 0;
    int fits = 0, used = 0;
    char keys[256] = "";
    size_t n = p->n_mitigations;
    for (size_t i = 0; i < n && !fits; i++) {
        od_workload t = cur;
        merge(&t, w0, &p->mitigations[i].workload);
        uint64_t dev;
        if (od_estimate_compute(a->m, &t, &e, NULL) != OD_OK || e.peak_allocated_bytes >= best)
            continue;
        cur = t;
        best = e.peak_allocated_bytes;
        overhead += p->mitigations[i].overhead_pct > 0 ? p->mitigations[i].overhead_pct : 0;
        strncat(keys, used++ ? " + " : "", sizeof keys - strlen(keys) - 1);
        strncat(keys, p->mitigations[i].key, sizeof keys - strlen(keys) - 1);
        od_plan_fits(a->m, &cur, a->gpu, &dev, &fits, NULL);
    }
    if (used < 2)
        return;
    size_t before = p->n_mitigations;
    add(a, "combined", &cur, overhead, "the sum of the parts", "the worst of the parts",
        "what the parts need", "what the parts add", "all of the above that help, together", 0);
    if (p->n_mitigations > before)
        snprintf(p->mitigations[before].title, sizeof p->mitigations[before].title,
                 "together: %.80s", keys);
}

static int by_overhead(const void *x, const void *y)
{
    const od_mitigation *a = x, *b = y;
    if (a->overhead_pct != b->overhead_pct)
        return a->overhead_pct < b->overhead_pct ? -1 : 1;
    if (a->peak_allocated_bytes != b->peak_allocated_bytes)
        return a->peak_allocated_bytes < b->peak_allocated_bytes ? -1 : 1;
    return strcmp(a->key, b->key);
}

/* Keep the mitigations that fit, in order; when none does, remember the one that came
 * closest (the stacked "combined" one when it exists, else the lowest peak). */
static void keep_fitting(od_plan *p)
{
    size_t n = 0, best = p->n_mitigations;
    for (size_t i = 0; i < p->n_mitigations; i++) {
        const od_mitigation *x = &p->mitigations[i];
        if (best == p->n_mitigations || !strcmp(x->key, "combined") ||
            (strcmp(p->mitigations[best].key, "combined") &&
             x->peak_allocated_bytes < p->mitigations[best].peak_allocated_bytes))
            best = i;
        if (x->fits)
            n++;
    }
    if (!n && best < p->n_mitigations) {
        p->closest = p->mitigations[best];
        p->has_closest = 1;
    }
    size_t k = 0;
    for (size_t i = 0; i < p->n_mitigations; i++)
        if (p->mitigations[i].fits)
            p->mitigations[k++] = p->mitigations[i];
    p->n_mitigations = k;
    /* the stacked change costs the sum of its parts: its place is by that cost */
    od_sort(p->mitigations, p->n_mitigations, sizeof p->mitigations[0], by_overhead);
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
    adder a = {m, gpu, out};
    if (w->task == OD_TASK_TRAIN)
        train_mitigations(&a, w);
    else
        infer_mitigations(&a, w);
    od_sort(out->mitigations, out->n_mitigations, sizeof out->mitigations[0], by_overhead);
    combined(&a, w);
    keep_fitting(out);
    return OD_OK;
}

void od_vllm_config_defaults(od_vllm_config *c)
{
    memset(c, 0, sizeof *c);
    c->gpu_memory_utilization = 0.9;
    c->block_size = 16;
    c->max_num_seqs = 256;
}

od_status od_plan_vllm(const od_model *m, const od_workload *w, const od_gpu *gpu,
                       const od_vllm_config *cfg, od_vllm_plan *out, od_error *err)
{
    if (!(cfg->gpu_memory_utilization > 0 && cfg->gpu_memory_utilization <= 1))
        return od_fail(err, OD_ERR_ARG, "--gpu-memory-utilization must be in (0, 1]");
    if (!cfg->max_model_len || !cfg->block_size || !cfg->max_num_seqs)
        return od_fail(err, OD_ERR_ARG, "--max-model-len, --block-size and --max-num-seqs must be at least 1");
    if (m->encoder)
        return od_fail(err, OD_ERR_ARG, "vLLM serves decoders; %s is an encoder", m->model_type);
    /* the profiling run: one dummy forward of the batched tokens, no KV cache; logits only
     * for each scheduled sequence's last token (fp32 in the sampler) */
    uint64_t T = cfg->max_num_batched_tokens;
    if (!T)
        T = cfg->max_model_len > 8192 ? cfg->max_model_len : 8192;
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
    memset(out, 0, sizeof *out);
    uint64_t seqs = cfg->max_num_seqs < T ? cfg->max_num_seqs : T;
    double sampler = (double)seqs * (double)m->vocab * 4 / (double)w->tp;
    out->budget_bytes = (uint64_t)(cfg->gpu_memory_utilization * (double)gpu->memory_bytes);
    out->weights_bytes = e.at_peak.parameters;
    out->quantized_params = e.quantized_params;
    double act = (double)e.peak_allocated_bytes - (double)e.at_peak.parameters -
                 (double)e.at_peak.logits_and_loss - (double)e.at_peak.kv_cache + sampler;
    out->activation_bytes = act > 0 ? (uint64_t)act : 0;
    out->non_torch_bytes = gpu->context_bytes;
    uint64_t used = out->weights_bytes + out->activation_bytes + out->non_torch_bytes;
    out->kv_cache_bytes = out->budget_bytes > used ? out->budget_bytes - used : 0;
    double kvb = w->kv_bytes ? w->kv_bytes : w->weights == OD_W_FP32 ? 4 : 2;
    out->block_bytes = (uint64_t)(od_model_kv_bytes_per_token(m, kvb) / (double)w->tp *
                                  (double)cfg->block_size + 0.5);
    if (!out->block_bytes)
        return od_fail(err, OD_ERR_ARG, "this model caches nothing per token");
    out->num_blocks = out->kv_cache_bytes / out->block_bytes;
    out->blocks_per_seq = (cfg->max_model_len + cfg->block_size - 1) / cfg->block_size;
    out->max_concurrent_seqs = out->num_blocks / out->blocks_per_seq;
    out->max_concurrency = (double)out->num_blocks * (double)cfg->block_size /
                           (double)cfg->max_model_len;
    out->fits = out->max_concurrent_seqs >= 1;
    return OD_OK;
}
