/* estimate.c - the memory model. Sizes are computed in double (exact below 2^53 bytes)
 * and rounded once at the end.
 *
 * Notation: h hidden, q = heads*head_dim, kv = kv_heads*head_dim, I MLP width, V vocab,
 * N = batch*seq tokens. Byte widths: W parameter, A compute (matmul outputs), R the
 * residual stream (fp32 under autocast, whose residual adds promote bf16 to fp32). */
#include "model/estimate.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model/gpus.h"

#define MIB (1024.0 * 1024.0)

typedef struct {
    const od_model *m;
    const od_workload *w;
    od_param_counts pc;
    int amp, mixed;
    double W, A, R;
    double B, S, N;         /* per-GPU micro-batch: N = B*S/cp tokens on this GPU */
    double Sq;              /* query positions on this GPU: S/cp (keys stay S) */
    double tp;
    double rep;             /* what Megatron replicates over tp (norms, dropouts, the
                             * residual stream) is split by this: tp with --sp, else 1 */
    const char *kernel;
    /* training: the pipeline stage this GPU holds (set_stage) */
    double ep_div;          /* GPUs one routed expert's weights split over: ep x etp */
    double Ls;              /* layers on the stage */
    int first, last;        /* it holds the embedding / the final norm, head and loss */
    double inflight;        /* micro-batches' worth of its layers held at the peak */
    double P;               /* parameters on one of its GPUs, before data parallelism */
} ctx;

const char *od_precision_name(od_precision p)
{
    static const char *n[] = {"fp32", "amp-bf16", "amp-fp16", "bf16", "mixed-fp16", "mixed-bf16"};
    return (unsigned)p < 6 ? n[p] : "?";
}
const char *od_optimizer_name(od_optimizer o)
{
    static const char *n[] = {"adamw", "adamw-fused", "sgd", "sgd-nomom", "adafactor", "adam8bit",
                              "paged-adamw-8bit"};
    return (unsigned)o < 7 ? n[o] : "?";
}
const char *od_fsdp_name(int fsdp)
{
    static const char *n[] = {"none", "full", "grad-op", "hybrid"};
    return (unsigned)fsdp < 4 ? n[fsdp] : "?";
}

/* Record one assumption the estimate rests on. */
static void assume(od_estimate *e, const char *text, const char *source)
{
    if (e->n_assumptions < OD_MAX_ASSUMPTIONS) {
        e->assumptions[e->n_assumptions].text = text;
        e->assumptions[e->n_assumptions].source = source;
        e->n_assumptions++;
    }
}

const char *od_base_weights_name(od_base_weights b)
{
    static const char *n[] = {"default", "nf4", "int8", "bf16"};
    return (unsigned)b < 4 ? n[b] : "?";
}

static const char *const LORA_NAMES[] = {"q", "k", "v", "o", "gate", "up", "down"};

const char *od_lora_targets_text(unsigned targets, char *buf, size_t n)
{
    if (!n)
        return buf;
    buf[0] = 0;
    if (!targets || (targets & OD_LORA_ALL) == OD_LORA_ALL) {
        snprintf(buf, n, "all-linear");
        return buf;
    }
    size_t l = 0;
    for (int i = 0; i < 7; i++)
        if (targets & (1u << i) && l < n)
            l += (size_t)snprintf(buf + l, n - l, "%s%s", l ? "," : "", LORA_NAMES[i]);
    return buf;
}

int od_lora_targets_parse(const char *text, unsigned *out)
{
    if (!strcmp(text, "all-linear") || !strcmp(text, "all")) {
        *out = 0;
        return 0;
    }
    unsigned t = 0;
    const char *p = text;
    while (*p) {
        size_t k = strcspn(p, ",");
        int hit = -1;
        for (int i = 0; i < 7; i++)
            if (strlen(LORA_NAMES[i]) == k && !strncmp(p, LORA_NAMES[i], k))
                hit = i;
        /* the module names themselves work too: q_proj, gate_proj ... */
        for (int i = 0; i < 7 && hit < 0; i++)
            if (k == strlen(LORA_NAMES[i]) + 5 && !strncmp(p, LORA_NAMES[i], k - 5) &&
                !strncmp(p + k - 5, "_proj", 5))
                hit = i;
        if (hit < 0)
            return -1;
        t |= 1u << hit;
        p += k;
        if (*p == ',')
            p++;
    }
    if (!t)
        return -1;
    *out = t == OD_LORA_ALL ? 0 : t;
    return 0;
}
const char *od_attention_name(od_attention a)
{
    static const char *n[] = {"sdpa", "eager", "flash"};
    return (unsigned)a < 3 ? n[a] : "?";
}
const char *od_ckpt_name(od_ckpt c)
{
    static const char *n[] = {"none", "full", "selective"};
    return (unsigned)c < 3 ? n[c] : "?";
}
const char *od_weights_name(od_weights w)
{
    static const char *n[] = {"bf16", "fp16", "fp32", "int8", "int4", "gptq-int4", "awq-int4",
                              "nf4", "fp8"};
    return (unsigned)w < 9 ? n[w] : "?";
}
const char *od_kv_cache_name(od_kv_cache k)
{
    static const char *n[] = {"none", "dynamic", "static", "paged"};
    return (unsigned)k < 4 ? n[k] : "?";
}

void od_workload_defaults(od_workload *w)
{
    memset(w, 0, sizeof *w);
    w->task = OD_TASK_TRAIN;
    w->batch = 1;
    w->seq = 1024;
    w->precision = OD_PREC_AMP_BF16;
    w->optimizer = OD_OPT_ADAMW;
    w->attention = OD_ATTN_SDPA;
    w->ckpt = OD_CKPT_NONE;
    w->grad_accum = 1;
    w->dp = w->tp = w->pp = w->cp = w->vpp = 1;
    w->nodes = 1;
    w->prompt = 512;
    w->new_tokens = 128;
    w->weights = OD_W_BF16;
    w->kv_cache = OD_KV_DYNAMIC;
    w->paged_block = 16;
    w->workspace_bytes = OD_CUBLAS_WS_SM90;
}

/* ---- what autograd saves (training) -------------------------------------------- */

/* Bytes per token a norm saves, with its output feeding n_cons linear layers.
 * Under autocast each consuming linear casts the fp32 output separately (casts of
 * non-leaf tensors are not cached), so each saves its own 2-byte copy. */
static double norm_saved_whole(const ctx *c, double n_cons)
{
    double h = c->m->hidden, out = c->amp ? n_cons * 2 * h : c->A * h;
    switch (c->m->norm) {
    case OD_NORM_LAYER:
        /* native_layer_norm saves input, mean, rstd; the output goes to the linears */
        return c->R * h + out + 8;
    case OD_NORM_RMS:
        /* x.to(fp32) [pow and mul save it], x*rsqrt [weight-mul saves the downcast] */
        if (c->A == 2 && !c->amp)
            return 4 * h + 2 * h + 2 * h + 4;   /* bf16: fp32 copy, downcast, output */
        return 4 * h + 4 * h + (c->amp ? out : 4 * h) + 4;
    case OD_NORM_RMS_GEMMA:
        /* x.float(), _norm(x) saved by the (1 + w) mul, type_as(x) to the linears */
        if (c->A == 2 && !c->amp)
            return 4 * h + 4 * h + 2 * h + 4;
        return 4 * h + 4 * h + (c->amp ? out : 4 * h) + 4;
    }
    return 0;
}

/* The same per GPU: sequence parallelism splits the norm and what the following
 * column-parallel linear saves (Megatron saves that linear's input before its all-gather
 * and gathers it again in backward; Korthikanti et al. 2022, section 4.2.2). */
static double norm_saved(const ctx *c, double n_cons)
{
    return norm_saved_whole(c, n_cons) / c->rep;
}

static int masked(const ctx *c)
{
    return c->m->sliding_window && c->S > (double)c->m->sliding_window &&
           c->w->attention == OD_ATTN_SDPA;
}

/* Which SDPA kernel torch picks for training (no padding mask, causal). */
static const char *sdpa_kernel(const ctx *c)
{
    const od_model *m = c->m;
    /* BLOOM and MPT add their ALiBi bias to explicit scores: transformers has no SDPA
     * path for them */
    if (c->w->attention == OD_ATTN_EAGER || m->alibi || m->eager_only)
        return "eager";
    if (c->w->attention == OD_ATTN_FLASH)
        return "flash";
    int gqa = m->kv_heads != m->heads;
    /* A sequence longer than the sliding window needs an explicit mask: no flash; and
     * transformers repeats K/V itself then (no enable_gqa with a mask). */
    if (masked(c))
        return m->head_dim % 8 == 0 ? "mem_efficient" : "math";
    /* FlashAttention-2 kernels: fp16/bf16, head_dim <= 256, GQA natively. */
    if (c->A == 2 && m->head_dim <= 256 && m->head_dim % 8 == 0)
        return "flash";
    /* Memory-efficient kernel: also fp32, but transformers passes enable_gqa=True for
     * GQA, which that kernel rejects: the math fallback runs then. */
    if (!gqa && m->head_dim % 8 == 0)
        return "mem_efficient";
    return "math";
}

/* Attention saves: bytes per token (tok) and bytes per score element (s2: times
 * batch*heads*seq^2). */
static void attn_saved(const ctx *c, double *tok, double *s2)
{
    const od_model *m = c->m;
    double A = c->A, tp = c->tp;
    double q = (double)m->heads * m->head_dim / tp, kv = (double)m->kv_heads * m->head_dim / tp;
    int rotary = m->positions == 0 && !m->alibi, gqa = m->kv_heads != m->heads;
    double pdrop = m->attn_dropout;
    *tok = *s2 = 0;
    if (m->qk_norm) /* per-head RMSNorm: fp32 copy + downcast saved for q and k */
        *tok += (c->A == 4 ? 8 : 6) * (q + kv);
    if (!strcmp(c->kernel, "flash") || !strcmp(c->kernel, "mem_efficient")) {
        /* q, k, v and the output (which o_proj saves too: the kernel's output is laid
         * out (B, S, H, D), so transpose+reshape is a view), plus fp32 logsumexp. */
        *tok += A * (q + 2 * kv) + A * q + 4.0 * m->heads / tp;
        if (m->fused_qkv && rotary) /* rotary makes new q, k; the fused qkv stays for v */
            *tok += A * (q + kv);
        if (masked(c) && gqa) /* repeat_kv copies saved instead of k, v */
            *tok += 2 * A * (q - kv);
        return;
    }
    double sm_bytes, cast;
    if (!strcmp(c->kernel, "math")) {
        /* at::_scaled_dot_product_attention_math: q*scale, repeat_interleave(k)*scale,
         * repeat_interleave(v), softmax output; output copied for o_proj. */
        *tok += A * q + A * q + A * (gqa ? q : kv) + A * q;
        sm_bytes = A;
        cast = 0;
    } else {
        /* transformers eager: matmul(q, k^T) saves q and the (repeated) k, softmax saves
         * its output (the shared eager_attention_forward asks softmax(dtype=float32);
         * GPT-2's own keeps the input dtype; autocast runs softmax in fp32 anyway), a
         * downcast follows, dropout keeps a bool mask and its output. */
        *tok += A * q + A * (gqa ? q : kv) + A * (gqa ? q : kv) + A * q;
        if (m->fused_qkv && rotary)
            *tok += A * (q + kv);
        int fp32_softmax = strcmp(m->model_type, "gpt2") != 0 || c->amp || A == 4;
        sm_bytes = fp32_softmax ? 4 : A;
        cast = A < sm_bytes ? A : 0;
    }
    *s2 = sm_bytes + (pdrop > 0 ? 1 + A : cast);
}

/* Bytes per token a dense MLP of width w saves. */
static double mlp_width_saved(const ctx *c, double w)
{
    double A = c->A;
    if (c->m->gated_mlp) /* gate, up, act(gate), act*up */
        return 4 * A * w;
    if (c->m->act == OD_ACT_GELU_NEW) {
        /* 0.5*x*(1+tanh(k*(x+0.044715*x^3))): pow saves x, tanh its output, the final
         * mul both factors; c_proj saves the product. Under autocast pow runs in fp32
         * (an fp32 copy of x is what it saves) and the chain stays fp32. */
        return c->amp ? (4 + 4 + 4 + 2 + 2) * w : 5 * A * w;
    }
    return 2 * A * w; /* act input + act output */
}

static double mlp_saved(const ctx *c, int moe)
{
    const od_model *m = c->m;
    double h = m->hidden, tp = c->tp;
    if (!moe)
        return mlp_width_saved(c, m->intermediate / tp);
    /* Routed experts, transformers 5's default grouped_mm path: each (token, expert)
     * pair gathers its input row, runs gate_up -> act(gate)*up -> down through
     * torch grouped_mm and is scaled by its routing weight. grouped_mm is not an
     * autocast op, so under autocast all of it stays in the fp32 of the weights. Saved
     * per pair: the gathered input, gate_up, act(gate), the product, the down output. */
    double We = c->W, k = m->experts_per_token;
    double t = k * We * (2 * h + 4.0 * m->expert_intermediate / tp);
    t += 4.0 * m->experts + 12.0 * k;  /* router softmax (fp32), top-k values/indices */
    if (m->shared_intermediate)       /* shared expert: a dense gated MLP + sigmoid gate */
        t += mlp_width_saved(c, m->shared_intermediate / tp) + (m->shared_gate ? c->A * h + 4 : 0);
    return t;
}

/* Bytes per token a Mamba mixer saves for backward with the CUDA kernels transformers
 * uses when they are installed (else it falls back to a slow path that materializes
 * batch x inner x seq x state tensors). Mamba calls mamba_ssm's mamba_inner_fn, which keeps
 * xz (2 inner), x_dbl, contiguous B and C, the scan output and, in fp32, the scan's
 * chunk states: inner x 2 state per 2048 tokens (selective_scan_interface.py,
 * MambaInnerFn, checkpoint_lvl 1). Jamba normalizes dt, B and C between the kernels, so
 * autograd keeps in_proj's output, the conv output, delta, the scan output and its gated
 * copy for out_proj besides. */
static double ssm_saved(const ctx *c)
{
    const od_model *m = c->m;
    double di = m->ssm_inner / c->tp, ds = m->ssm_state, r = m->ssm_dt_rank, A = c->A;
    double chunks = ceil(c->Sq / 2048.0);
    double scan = 4 * di * 2 * ds * chunks / c->Sq;
    if (m->ssm_dt_norms)
        return A * (6 * di + 3 * (r + 2 * ds)) + scan;
    return A * (3 * di + r + 4 * ds) + scan;
}

/* Bytes one layer saves for backward, for the micro-batch (tokens + score terms); ssm:
 * a Mamba mixer stands where attention would. */
static double layer_saved_kind(const ctx *c, int moe, int ssm, int selective, double *scores_out)
{
    const od_model *m = c->m;
    double h = m->hidden, N = c->N;
    double at_tok, s2;
    attn_saved(c, &at_tok, &s2);
    double scores = c->B * (m->heads / c->tp) * c->Sq * c->S * s2;
    if (selective)
        scores = 0; /* the attention core is recomputed */
    double n_attn = m->fused_qkv ? 1 : 3;
    if (ssm) {
        at_tok = ssm_saved(c);
        scores = 0;
        n_attn = 1; /* in_proj */
    }
    double n_mlp = moe ? 1 + (m->shared_intermediate ? 2 + m->shared_gate : 0)
                       : (m->gated_mlp && !m->fused_gate_up ? 2 : 1);
    double t = 0;
    if (m->parallel_block) {
        /* one input for both branches; a second norm adds its own output */
        t += norm_saved(c, n_attn + n_mlp);
        if (m->parallel_block == 2 && !c->amp)
            t += c->A * h / c->rep;
    } else {
        t += norm_saved(c, n_attn) + (m->no_mlp ? 0 : norm_saved(c, n_mlp));
    }
    t += at_tok + (m->no_mlp ? 0 : mlp_saved(c, moe));
    if (m->resid_dropout > 0)
        t += 2 * h / c->rep; /* bool masks of the two residual dropouts */
    if (m->sandwich_norm)
        t += 2 * 8 * h / c->rep;
    if (scores_out)
        *scores_out = scores;
    return t * N + scores;
}

/* The same, averaged over the layers' kinds (attention or Mamba mixer, dense or MoE;
 * taken as independent). */
static double layer_saved(const ctx *c, int moe, int selective, double *scores_out)
{
    const od_model *m = c->m;
    double fs = m->layers ? (double)m->ssm_layers / (double)m->layers : 0;
    double t = (1 - fs) * layer_saved_kind(c, moe, 0, selective, scores_out);
    if (fs > 0)
        t += fs * layer_saved_kind(c, moe, 1, selective, fs == 1 ? scores_out : NULL);
    return t;
}

/* Largest transient of one layer's backward: gradients of the widest intermediates. */
static double layer_bwd_transient(const ctx *c)
{
    const od_model *m = c->m;
    if (m->experts)
        return (3 * c->W * m->expert_intermediate * m->experts_per_token / c->tp +
                2 * c->R * m->hidden / c->rep) * c->N;
    return (3 * c->A * m->intermediate / c->tp + 2 * c->R * m->hidden / c->rep) * c->N;
}

static double opt_state_bytes(const ctx *c, double trainable, double Ws)
{
    const od_model *m = c->m;
    switch (c->w->optimizer) {
    case OD_OPT_ADAMW:
    case OD_OPT_ADAMW_FUSED:
        return 2 * trainable * Ws;
    case OD_OPT_SGD:
        return trainable * Ws;
    case OD_OPT_SGD_NOMOM:
        return 0;
    case OD_OPT_ADAM8BIT:
    case OD_OPT_PAGED_ADAM8BIT:
        /* two uint8 states + one fp32 absmax per 256-element block each */
        return trainable * (2 + 2 * 4.0 / 256);
    case OD_OPT_ADAFACTOR: {
        /* factored second moment: a row and a column vector per matrix; vectors keep
         * a full one. No first moment (beta1 = None). */
        if (c->w->lora_rank)
            return trainable * Ws;
        double h = m->hidden, q = (double)m->heads * m->head_dim, kv = (double)m->kv_heads * m->head_dim;
        double I = m->intermediate, mats = (h + q) * 2 + (h + kv) * 2;
        mats += (m->gated_mlp ? 3 : 2) * (h + I);
        if (m->experts)
            mats += m->experts * (m->gated_mlp ? 3 : 2) * (h + m->expert_intermediate);
        double vec = 6 * h;
        double emb = m->vocab + h + (m->positions ? m->positions + h : 0) +
                     (m->tied_embeddings ? 0 : m->vocab + h);
        return (m->layers * (mats + vec) + emb) * Ws;
    }
    }
    return 0;
}

static double opt_temp_bytes(const ctx *c, double trainable, double Ws)
{
    switch (c->w->optimizer) {
    case OD_OPT_ADAMW:
        /* _multi_tensor_adamw: torch._foreach_sqrt(exp_avg_sqs) allocates one full set
         * (all params share one device/dtype group), then divides/adds in place. */
        return trainable * Ws;
    case OD_OPT_ADAFACTOR:
        /* single-tensor Adafactor: var_estimate = row_var @ col_var has the shape of
         * the largest parameter; update and norm temporaries come on top. */
        return (double)c->pc.largest_tensor * Ws * (c->w->lora_rank ? 0 : 1);
    default:
        /* fused AdamW / SGD / 8-bit kernels update in place */
        return 0;
    }
}

/* Whether LoRA targets module bit (0 = all-linear). */
static int targets(const od_workload *w, unsigned bit)
{
    return !w->lora_targets || (w->lora_targets & bit);
}

/* Layers that train: all but the first --freeze ones. */
static double trained_layers(const od_model *m, const od_workload *w)
{
    return w->freeze_layers >= m->layers ? 0 : (double)(m->layers - w->freeze_layers);
}

static double lora_params(const od_model *m, const od_workload *w, double r)
{
    double h = m->hidden, q = (double)m->heads * m->head_dim, kv = (double)m->kv_heads * m->head_dim;
    double I = m->experts ? m->expert_intermediate : m->intermediate;
    /* A: in x r, B: r x out for each targeted projection (a plain MLP's fc is "up", its
     * proj "down"; it has no gate) */
    double per = targets(w, OD_LORA_Q) * (h + q) + targets(w, OD_LORA_K) * (h + kv) +
                 targets(w, OD_LORA_V) * (h + kv) + targets(w, OD_LORA_O) * (q + h) +
                 (m->gated_mlp ? targets(w, OD_LORA_GATE) : 0) * (h + I) +
                 targets(w, OD_LORA_UP) * (h + I) + targets(w, OD_LORA_DOWN) * (h + I);
    return r * per * trained_layers(m, w);
}

/* Bytes of the frozen LoRA base stored as b: the block linears quantized (bitsandbytes
 * leaves the embeddings, norms and lm_head in 16 bits). */
static double base_bytes(const ctx *c, od_base_weights b)
{
    const od_model *m = c->m;
    double V = m->encoder ? 0 : (double)m->vocab, h = m->hidden;
    double P = c->pc.total, Pq = (double)c->pc.matmul - V * h; /* not lm_head */
    switch (b) {
    case OD_BASE_NF4: return Pq * (0.5 + 1.0 / 64 + 4.0 / (64 * 256)) + (P - Pq) * 2;
    case OD_BASE_INT8: return Pq + Pq / h * 4 + (P - Pq) * 2;
    case OD_BASE_BF16: return 2 * P;
    default: return P * c->W;
    }
}

/* Past this an estimate is meaningless (and uint64 sums could overflow). */
#define ABSURD_BYTES 288230376151711744.0 /* 2^58 = 256 PiB */

static uint64_t u(double x) { return x <= 0 ? 0 : x >= ABSURD_BYTES ? (uint64_t)ABSURD_BYTES : (uint64_t)(x + 0.5); }

static od_status absurd(od_error *err)
{
    return od_fail(err, OD_ERR_LIMIT, "the estimate exceeds 256 PiB: sizes are absurd");
}

/* The framework-specific settings: Megatron's layouts, DeepSpeed's offload targets,
 * expert parallelism, uneven pipeline stages. */
static od_status check_frameworks(const od_model *m, const od_workload *w, od_error *err)
{
    if (w->megatron && (w->deepspeed || w->fsdp || w->ddp))
        return od_fail(err, OD_ERR_ARG, "--framework is one of torch, deepspeed, fsdp, ddp, megatron");
    if (w->megatron && w->zero > 1)
        return od_fail(err, OD_ERR_ARG, "--framework megatron: its distributed optimizer is --zero 1 "
                       "(optimizer state sharded); ZeRO-2/3 (Megatron FSDP) are not modelled");
    if ((w->offload_optimizer == OD_OFFLOAD_NVME || w->offload_params == OD_OFFLOAD_NVME) &&
        (!w->deepspeed || w->zero != 3))
        return od_fail(err, OD_ERR_ARG, "NVMe offload is DeepSpeed ZeRO-Infinity: give --framework "
                       "deepspeed --zero 3");
    if (w->buffer_factor != 0 && !(w->buffer_factor >= 1 && w->buffer_factor <= 16))
        return od_fail(err, OD_ERR_ARG, "--buffer-factor must be between 1 and 16 (DeepSpeed's default 1.5)");
    if (w->buffer_factor != 0 && !w->deepspeed)
        return od_fail(err, OD_ERR_ARG, "--buffer-factor is DeepSpeed's host-RAM margin: give "
                       "--framework deepspeed");
    if (w->ep > 1 || w->etp > 1) {
        if (!w->megatron)
            return od_fail(err, OD_ERR_ARG, "--ep and --etp (expert parallelism) need --framework megatron");
        if (!m->experts)
            return od_fail(err, OD_ERR_ARG, "--ep and --etp split the experts of an MoE; %s has none",
                           m->model_type);
        if (w->ep > 1 && m->experts % w->ep)
            return od_fail(err, OD_ERR_ARG, "--ep %llu must divide the %llu experts",
                           (unsigned long long)w->ep, (unsigned long long)m->experts);
        if (w->etp > 1 && m->expert_intermediate % w->etp)
            return od_fail(err, OD_ERR_ARG, "--etp %llu must divide the experts' width %llu",
                           (unsigned long long)w->etp, (unsigned long long)m->expert_intermediate);
        uint64_t etp = w->etp ? w->etp : w->tp, ep = w->ep ? w->ep : 1;
        if ((w->dp * w->tp * w->cp) % (ep * etp))
            return od_fail(err, OD_ERR_ARG, "--ep x --etp must divide --dp x --tp x --cp (the expert "
                           "layers use the same GPUs)");
    }
    uint64_t f = w->first_stage_layers, l = w->last_stage_layers;
    if ((f || l) && w->pp < 2)
        return od_fail(err, OD_ERR_ARG, "--first-stage-layers and --last-stage-layers shape a pipeline: "
                       "give --pp 2 or more");
    if ((f || l) && w->vpp > 1)
        return od_fail(err, OD_ERR_ARG, "uneven stages and --vpp do not combine (Megatron-Core refuses it)");
    if (f || l) {
        uint64_t mid = w->pp - (f ? 1 : 0) - (l ? 1 : 0);
        if (f + l > m->layers || (mid == 0 && f + l != m->layers) || (mid && (m->layers - f - l) % mid) ||
            (mid && m->layers - f - l == 0))
            return od_fail(err, OD_ERR_ARG, "--first-stage-layers %llu and --last-stage-layers %llu leave "
                           "%llu layers that do not split evenly over the other %llu stages",
                           (unsigned long long)f, (unsigned long long)l,
                           (unsigned long long)(m->layers > f + l ? m->layers - f - l : 0),
                           (unsigned long long)mid);
    } else if (w->megatron && w->pp > 1 && m->layers % w->pp) {
        return od_fail(err, OD_ERR_ARG, "--pp %llu must divide the %llu layers (Megatron-Core; "
                       "--first-stage-layers / --last-stage-layers for uneven stages)",
                       (unsigned long long)w->pp, (unsigned long long)m->layers);
    }
    if (w->stage && w->pp < 2)
        return od_fail(err, OD_ERR_ARG, "--stage picks a pipeline stage: give --pp 2 or more");
    return OD_OK;
}

static od_status check(const od_model *m, const od_workload *w, od_error *err)
{
    od_status st;
    if (!w->batch)
        return od_fail(err, OD_ERR_ARG, "--batch must be at least 1");
    if (w->batch > (1u << 24))
        return od_fail(err, OD_ERR_ARG, "--batch is absurdly large");
    if (!w->dp || !w->tp || !w->pp || !w->grad_accum)
        return od_fail(err, OD_ERR_ARG, "--dp, --tp, --pp and --grad-accum must be at least 1");
    /* training splits every head (Megatron requires tp to divide the query groups);
     * inference copies KV heads when tp outnumbers them, as vLLM does */
    if (w->tp > 1 && m->ssm_layers < m->layers &&
        (m->heads % w->tp || (m->kv_heads % w->tp && (w->task == OD_TASK_TRAIN || w->tp % m->kv_heads))))
        return od_fail(err, OD_ERR_ARG, w->task == OD_TASK_TRAIN
                       ? "--tp %llu must divide the number of (key/value) heads"
                       : "--tp %llu must divide the attention heads and divide or be a multiple of the "
                         "key/value heads", (unsigned long long)w->tp);
    /* Mamba mixers split along their inner width */
    if (w->tp > 1 && m->ssm_layers && m->ssm_inner % w->tp)
        return od_fail(err, OD_ERR_ARG, "--tp %llu must divide the Mamba inner width %llu",
                       (unsigned long long)w->tp, (unsigned long long)m->ssm_inner);
    if ((w->fsdp || w->ddp) && w->deepspeed)
        return od_fail(err, OD_ERR_ARG, "--framework is one of torch, deepspeed, fsdp, ddp, megatron");
    if (w->sp && w->tp < 2)
        return od_fail(err, OD_ERR_ARG, "--sp (sequence parallelism) splits along --tp: give --tp 2 or more");
    if (w->fsdp && w->ddp)
        return od_fail(err, OD_ERR_ARG, "FSDP and DDP are two wrappers: give one --framework");
    if (w->ddp && w->zero)
        return od_fail(err, OD_ERR_ARG, "DDP keeps full replicas: --zero needs --framework fsdp or deepspeed");
    if (w->fsdp == OD_FSDP_HYBRID && (w->nodes < 2 || w->dp % w->nodes))
        return od_fail(err, OD_ERR_ARG, "--fsdp hybrid shards within a node: give --nodes N (N >= 2 "
                       "dividing --dp)");
    if (w->base_weights && !w->lora_rank)
        return od_fail(err, OD_ERR_ARG, "--base-weights is the frozen base of a LoRA fine-tune: "
                       "give --lora-rank too");
    if (w->freeze_layers > m->layers)
        return od_fail(err, OD_ERR_ARG, "--freeze %llu exceeds the %llu layers",
                       (unsigned long long)w->freeze_layers, (unsigned long long)m->layers);
    if (w->pp > m->layers)
        return od_fail(err, OD_ERR_ARG, "--pp %llu exceeds the %llu layers",
                       (unsigned long long)w->pp, (unsigned long long)m->layers);
    uint64_t cp = w->cp ? w->cp : 1, vpp = w->vpp ? w->vpp : 1;
    if (cp > 1024 || vpp > 1024)
        return od_fail(err, OD_ERR_ARG, "--cp and --vpp are absurdly large");
    if (cp > 1 && w->task != OD_TASK_TRAIN)
        return od_fail(err, OD_ERR_ARG, "--cp splits a training sequence; generate() has no "
                       "context parallelism");
    /* Megatron cuts each sequence into 2 x cp chunks and gives rank r chunks r and
     * 2cp-1-r (get_batch_on_this_cp_rank: balanced causal work) */
    if (cp > 1 && w->seq % (2 * cp))
        return od_fail(err, OD_ERR_ARG, "--cp %llu needs --seq divisible by 2 x cp = %llu "
                       "(each GPU takes two of 2cp chunks)", (unsigned long long)cp,
                       (unsigned long long)(2 * cp));
    if (vpp > 1 && w->pp < 2)
        return od_fail(err, OD_ERR_ARG, "--vpp (virtual stages per GPU) interleaves a pipeline: "
                       "give --pp 2 or more");
    if (vpp > 1 && m->layers % (w->pp * vpp))
        return od_fail(err, OD_ERR_ARG, "--pp %llu x --vpp %llu must divide the %llu layers "
                       "(each virtual stage holds the same number)", (unsigned long long)w->pp,
                       (unsigned long long)vpp, (unsigned long long)m->layers);
    if (w->zero < 0 || w->zero > 3)
        return od_fail(err, OD_ERR_ARG, "--zero must be 0, 1, 2 or 3");
    if (w->nodes > 1 && w->dp % w->nodes) /* 0 reads as 1 node */
        return od_fail(err, OD_ERR_ARG, "--nodes must divide --dp (GPUs per node = dp / nodes)");
    if ((w->offload_params || w->zero_init) && w->zero != 3)
        return od_fail(err, OD_ERR_ARG, "--offload-params and --zero-init need --zero 3");
    if ((st = check_frameworks(m, w, err)) != OD_OK)
        return st;
    if (w->task == OD_TASK_TRAIN && (!w->seq || w->seq > (1u << 24)))
        return od_fail(err, OD_ERR_ARG, "--seq must be between 1 and 16777216");
    if (w->task == OD_TASK_INFER && (!w->prompt || w->prompt + w->new_tokens > (1u << 24)))
        return od_fail(err, OD_ERR_ARG, "--prompt must be at least 1 and prompt + new tokens sane");
    return OD_OK;
}

/* ---- training: the stage this GPU holds ------------------------------------------- */

/* Layers on pipeline stage r of pp: --first-stage-layers / --last-stage-layers, the rest
 * evenly over the middle stages (Megatron-Core's decoder_first/last_pipeline_num_layers);
 * else L/pp each, rounded up. */
static double stage_layers(const od_model *m, const od_workload *w, uint64_t r)
{
    double L = (double)m->layers, pp = (double)w->pp;
    double f = (double)w->first_stage_layers, l = (double)w->last_stage_layers;
    if (w->pp < 2)
        return L;
    if (!f && !l)
        return ceil(L / pp);
    double mid_stages = pp - (f ? 1 : 0) - (l ? 1 : 0);
    double mid = mid_stages > 0 ? (L - f - l) / mid_stages : 0;
    if (r == 0 && f)
        return f;
    if (r == w->pp - 1 && l)
        return l;
    return mid;
}

/* Micro-batches' worth of its layers stage r holds at the peak of 1F1B: the warm-up
 * forwards not yet drained, pp - r of them (fewer micro-batches keep fewer). Interleaved
 * with vpp chunks a stage: 2(pp - r - 1) + (vpp - 1)pp + 1 chunks of 1/vpp of its layers
 * (Megatron-Core schedules.py get_pp_rank_microbatches; for the first stage this is
 * theoretical_memory_usage.py's (1 + (pp - 1)/(pp vpp)) x pp). */
static double stage_inflight(const od_workload *w, uint64_t r)
{
    double pp = (double)w->pp, m = (double)w->grad_accum, vpp = w->vpp > 1 ? (double)w->vpp : 1;
    if (w->pp < 2)
        return 1;
    if (vpp > 1) {
        double chunks = 2 * (pp - (double)r - 1) + (vpp - 1) * pp + 1;
        return fmin(chunks, m * vpp) / vpp;
    }
    return fmin(pp - (double)r, m);
}

/* Point c at stage r: its layers, what it holds besides, its micro-batches in flight, and
 * its parameters per GPU. The first stage holds the embedding, the last the final norm and
 * the output layer (a copy of the embedding when they are tied: Megatron's
 * shared_embedding_or_output_weight, DeepSpeed's TiedLayerSpec). Routed experts split over
 * ep x etp GPUs, everything else over tp. */
static void set_stage(ctx *c, uint64_t r)
{
    const od_model *m = c->m;
    const od_workload *w = c->w;
    double L = m->layers ? (double)m->layers : 1;
    c->first = r == 0;
    c->last = r + 1 >= w->pp;
    c->Ls = stage_layers(m, w, r);
    c->inflight = stage_inflight(w, r);
    double experts = (double)c->pc.experts / L * c->Ls;
    double dense = ((double)c->pc.layers - (double)c->pc.experts) / L * c->Ls;
    double P = dense / c->tp + experts / c->ep_div;
    if (c->first)
        P += (double)c->pc.embedding / c->tp;
    if (c->last) {
        P += (double)c->pc.head / c->tp;
        if (m->tied_embeddings && w->pp > 1 && !m->encoder)
            P += (double)m->vocab * m->hidden / c->tp;
    }
    c->P = P;
}

/* ---- training: model states ------------------------------------------------------- */

/* What a training step keeps between steps on one GPU, and on the host. */
typedef struct {
    double trainable;       /* trainable parameters of the whole model */
    double share;           /* this GPU's part of the model's parameters */
    double Wg;              /* bytes of one gradient as autograd writes it */
    double params, grads, states, opt_temp, host, nvme, ddp_b;
} states_t;

/* Whether mixed precision keeps fp32 main gradients for the optimizer. */
static int main_fp32(const ctx *c)
{
    return c->mixed && c->w->main_grads != OD_MAIN_GRADS_BF16;
}

/* Plain PyTorch, with the generic ZeRO stages over dp GPUs (the ZeRO paper's layout, as
 * DeepSpeed lays it out: an fp32 gradient partition beside the 16-bit gradients under
 * mixed precision) and optional CPU offload of the optimizer. */
static void torch_states(const ctx *c, states_t *s)
{
    const od_workload *w = c->w;
    double dp = (double)w->dp, W = c->W, sh = s->share;
    double Ws = w->lora_rank ? s->Wg : c->W;
    if (c->mixed)
        Ws = 4;
    double zo = w->zero >= 1 ? dp : 1;
    double base_w = (w->base_weights ? base_bytes(c, w->base_weights) : (double)c->pc.total * W) * sh;
    s->params = base_w + (w->lora_rank ? s->trainable * sh * s->Wg : 0);
    if (w->zero >= 3)
        s->params = s->params / dp + 2 * (double)c->pc.per_layer * W / c->tp; /* + gathered layers */
    s->grads = s->trainable * sh * s->Wg / (w->zero >= 2 ? dp : 1);
    double main32 = main_fp32(c) ? 4 * s->trainable * sh / zo : 0;
    double master = c->mixed ? 4 * s->trainable : 0;
    s->states = (master + opt_state_bytes(c, s->trainable, Ws)) * sh / zo;
    s->opt_temp = opt_temp_bytes(c, s->trainable, Ws) * sh / zo;
    if (w->offload_optimizer) { /* the fp32 gradients go to the host with the state */
        s->host = s->states + main32;
        s->states = s->opt_temp = main32 = 0;
    }
    s->grads += main32;
}

/* DeepSpeed's ZeRO stages per GPU and host RAM per node, by its own estimators
 * (runtime/zero/stage_1_and_2.py estimate_zero2_model_states_mem_needs, stage3.py
 * estimate_zero3_model_states_mem_needs): 16-bit parameters and gradients, an fp32
 * gradient partition, fp32 master weights and Adam moments; ZeRO-2 = 2P + 18P/N since
 * PR #5099 (docs/memory.rst still prints 4P + 16P/N), ZeRO-3 = 4 x the largest module +
 * 18P/N; host RAM x additional_buffer_factor. ZeRO-0/1 (no estimator) keep the 16-bit
 * gradients whole: 4P + 16P/N (N = 1 for ZeRO-0). NVMe (ZeRO-Infinity): the states or the
 * 16-bit parameters on NVMe, with DeepSpeed's default swap buffers in pinned host memory
 * (offload_config.py: optimizer buffer_count 4 of a sub-group, parameter buffer_count 5 x
 * buffer_size 1e8 and max_in_cpu 1e9 elements). */
static void deepspeed_states(const ctx *c, states_t *s)
{
    const od_workload *w = c->w;
    double P = c->P, Lg = (double)c->pc.largest_module / c->tp;
    double N = (double)w->dp, nodes = w->nodes ? (double)w->nodes : 1, n = N / nodes;
    double buf = w->buffer_factor > 0 ? w->buffer_factor : 1.5;
    double g32 = main_fp32(c) ? 4 : 0;
    int off = w->offload_optimizer, offp = w->offload_params, zi = w->zero_init;
    s->opt_temp = 0; /* FusedAdam / DeepSpeedCPUAdam update in place */
    if (w->zero <= 2) {
        double Nz = w->zero == 0 ? 1 : N;
        s->params = 2 * P;
        if (off) {
            s->grads = s->states = 0;
            s->host = P * fmax(4 * N, 16) * buf;
        } else {
            s->grads = (w->zero == 2 ? 2 * P / N : 2 * P) + g32 * P / Nz;
            s->states = 12 * P / Nz;
            s->host = P * 4 * n * buf; /* each process loads the fp32 model */
        }
        return;
    }
    /* two gathered modules in 16 bits: the one computing and the one prefetched */
    s->params = 4 * Lg;
    s->grads = s->states = 0;
    double sub = fmin(1e9, P / N); /* one sub-group of sub_group_size elements */
    double ram = 0, nvme = 0;
    if (off == OD_OFFLOAD_NVME)
        nvme += 16 * P / nodes, ram += 4 * sub * 4 * n;       /* 4 swap buffers of fp32 */
    else if (off)
        ram += 16 * P / nodes;
    if (offp == OD_OFFLOAD_NVME)
        nvme += 2 * P / nodes, ram += (5 * 1e8 + fmin(1e9, P / N)) * 2 * n;
    else if (offp)
        ram += 2 * P / nodes;
    else
        s->params += 2 * P / N;
    if (!off) {
        s->grads = (g32 ? 4 : 2) * P / N;
        s->states = 12 * P / N;
        ram = (zi ? Lg : P) * 4 * n;
    } else if (!zi) {
        ram = fmax(4 * n * P, ram); /* each process loads the fp32 model first */
    }
    s->host = ram * buf;
    s->nvme = nvme;
}

/* PyTorch FSDP: flat parameters sharded in their stored dtype over the shard group;
 * gathered in the compute dtype (MixedPrecision param_dtype) one FSDP unit (a layer) at a
 * time plus the one prefetched; SHARD_GRAD_OP keeps them gathered from forward through
 * backward. Gradients: the shards, plus one unit's unsharded gradient before its
 * reduce-scatter. */
static void fsdp_states(const ctx *c, states_t *s)
{
    const od_workload *w = c->w;
    double dp = (double)w->dp, tp = c->tp, sh = s->share, P = (double)c->pc.total;
    double nodes = w->nodes ? (double)w->nodes : 1;
    double G = w->fsdp == OD_FSDP_HYBRID ? dp / nodes : dp;
    double Wc = c->A, unit = (double)c->pc.per_layer * Wc / tp;
    double Ws = c->mixed ? 4 : w->lora_rank ? s->Wg : c->W;
    double base_w = (w->base_weights ? base_bytes(c, w->base_weights) : P * c->W) * sh;
    double master = c->mixed ? 4 * s->trainable : 0;
    s->params = base_w / G + (w->fsdp == OD_FSDP_GRAD_OP ? P * Wc * sh : 2 * unit);
    s->grads = s->trainable * sh * s->Wg / G +
               s->trainable / fmax(1, (double)c->m->layers) * s->Wg / tp;
    s->states = (master + opt_state_bytes(c, s->trainable, Ws)) * sh / G;
    s->opt_temp = opt_temp_bytes(c, s->trainable, Ws) * sh / G;
    s->host = w->offload_optimizer ? s->states : 0;
    if (w->offload_optimizer)
        s->states = s->opt_temp = 0;
}

/* Megatron-Core: bf16 parameters, the DDP's contiguous fp32 main-gradient buffer (bf16
 * with --grad-reduce-in-bf16), fp32 main parameters and Adam moments: 18 bytes a
 * parameter, or 6 + 12/d with the distributed optimizer (--zero 1) over d data-parallel
 * GPUs (theoretical_memory_usage.py compute_weight_and_optimizer_memory; arguments.py turns
 * accumulate_allreduce_grads_in_fp32 on for bf16). Routed experts shard their optimizer
 * state over the expert data-parallel group, dp x tp x cp / (ep x etp) GPUs. */
static void megatron_states(const ctx *c, states_t *s)
{
    const od_workload *w = c->w;
    double L = c->m->layers ? (double)c->m->layers : 1;
    double Pe = (double)c->pc.experts / L * c->Ls / c->ep_div, Pd = c->P - Pe;
    double d = w->zero >= 1 ? (double)w->dp : 1;
    double de = w->zero >= 1 ? fmax(1, (double)w->dp * c->tp * (double)w->cp / c->ep_div) : 1;
    double pw = c->mixed ? 2 : c->W, gw = c->mixed ? (main_fp32(c) ? 4 : 2) : c->W;
    double st = c->mixed ? 12 : opt_state_bytes(c, 1, c->W);
    s->params = pw * c->P;
    s->grads = gw * c->P;
    s->states = st * (Pd / d + Pe / de);
    s->opt_temp = 0; /* TE / apex FusedAdam update in place */
    if (w->offload_optimizer) { /* --optimizer-cpu-offload */
        s->host = s->states;
        s->states = 0;
    }
}

static void train_states(const ctx *c, states_t *s)
{
    const od_model *m = c->m;
    const od_workload *w = c->w;
    double P = (double)c->pc.total, frozen = (double)m->layers - trained_layers(m, w);
    memset(s, 0, sizeof *s);
    s->share = P > 0 ? c->P / P : 1;
    s->trainable = w->lora_rank ? lora_params(m, w, (double)w->lora_rank) : P;
    if (!w->lora_rank && w->freeze_layers) /* the embeddings and the first N layers */
        s->trainable = fmax(0, P - (double)c->pc.embedding - frozen * (double)c->pc.per_layer);
    s->Wg = c->W;
    if (w->lora_rank) /* adapters live in fp32 under autocast, in the weights' dtype else */
        s->Wg = c->amp || c->W == 4 ? 4 : 2;
    if (w->megatron)
        megatron_states(c, s);
    else if (w->deepspeed)
        deepspeed_states(c, s);
    else if (w->fsdp)
        fsdp_states(c, s);
    else
        torch_states(c, s);
    if (m->encoder && c->first && !m->vision) /* BertEmbeddings' int64 position_ids and token_type_ids */
        s->params += 16.0 * (double)m->positions / c->tp;
    /* DDP's reducer copies every gradient into its buckets (bucket_cap_mb = 25) unless
     * gradient_as_bucket_view makes the gradients views of them */
    if (w->ddp && !w->ddp_bucket_view)
        s->ddp_b = s->trainable * s->share * s->Wg;
}

/* ---- training: what the step saves for backward ------------------------------------ */

/* Bytes per token one Megatron-Core transformer layer saves for backward, bf16, on this
 * GPU (megatron/core/transformer: TransformerLayer with the TE spec). TE's fused
 * LayerNormColumnParallelLinear keeps the norm's input, its output for the weight
 * gradient and the fp32 row statistics (mean and rstd; rstd for RMSNorm); flash / cuDNN
 * attention keeps q, k, v (after the fused RoPE), its output (linear_proj's input, the
 * same tensor) and the fp32 softmax log-sum-exp; bias_swiglu_impl keeps its 2I input and
 * linear_fc2 the I-wide product (a GeLU MLP: fc1's output and the GeLU output);
 * bias_dropout_add a 1-byte mask when hidden_dropout > 0. MoE layers (alltoall
 * dispatcher, grouped GEMM): the separate pre-MLP norm, the router's fp32 logits and
 * probabilities, and per routed copy of a token (k of them, tp-shared input, experts'
 * width split by etp) the permuted input, the SwiGLU input and product and the expert
 * output. Sequence parallelism splits the norms, masks and the residual by tp. */
static double mcore_layer_tok(const ctx *c, int moe)
{
    const od_model *m = c->m;
    double h = m->hidden, tp = c->tp, rep = c->rep;
    double stats = m->norm == OD_NORM_LAYER ? 8 : 4;
    double norm = (2 * h + 2 * h + stats) / rep;
    double H = (double)m->heads / tp, q = H * m->head_dim, kv = (double)m->kv_heads * m->head_dim / tp;
    double v = kv;
    if (m->kv_lora_rank) { /* MLA: per-head k of nope + rope, v of v_head_dim; the latent */
        kv = H * (m->qk_nope_dim + m->qk_rope_dim);
        v = H * m->v_head_dim;
        norm += 2 * 2.0 * (m->kv_lora_rank + (m->q_lora_rank ? m->q_lora_rank : 0)) + 8;
    }
    double attn = 2 * (q + kv + v) + 2 * (m->kv_lora_rank ? v : q) + 4 * H;
    if (m->qk_norm)
        attn += 2 * (q + kv) + 8;
    double etp = c->w->etp ? (double)c->w->etp : tp;
    double t = norm + attn + norm;
    if (!moe) {
        double I = m->intermediate / tp;
        t += m->gated_mlp ? 6 * I : 4 * I;
    } else {
        double k = m->experts_per_token, Ie = m->expert_intermediate / etp;
        t += 8.0 * m->experts + k * (4 * h + (m->gated_mlp ? 6 : 4) * Ie);
        if (m->shared_intermediate)
            t += (m->gated_mlp ? 6 : 4) * m->shared_intermediate / tp;
    }
    if (m->resid_dropout > 0)
        t += 2 * h / rep;
    return t;
}

/* What one layer saves for the micro-batch, averaged over the model's dense and MoE
 * layers; layer_full: the kind that dominates, whole (what a recomputed layer rebuilds). */
static void saved_at(const ctx *c, double *per_layer, double *layer_full)
{
    const od_model *m = c->m;
    const od_workload *w = c->w;
    double frac_moe = m->layers ? (double)od_model_moe_layers(m) / m->layers : 0;
    if (w->megatron) {
        double dense = mcore_layer_tok(c, 0) * c->N, moe = mcore_layer_tok(c, 1) * c->N;
        *layer_full = frac_moe > 0.5 ? moe : dense;
        *per_layer = w->ckpt == OD_CKPT_FULL ? c->R * m->hidden * c->N / c->rep
                                             : frac_moe * moe + (1 - frac_moe) * dense;
        return;
    }
    *layer_full = frac_moe > 0.5 ? layer_saved(c, 1, 0, NULL) : layer_saved(c, 0, 0, NULL);
    if (w->ckpt == OD_CKPT_FULL) {
        *per_layer = c->R * m->hidden * c->N / c->rep; /* checkpoint keeps each layer's input */
        return;
    }
    int sel = w->ckpt == OD_CKPT_SELECTIVE;
    *per_layer = frac_moe * layer_saved(c, 1, sel, NULL) + (1 - frac_moe) * layer_saved(c, 0, sel, NULL);
    if (w->lora_rank && c->amp) {
        /* each adapter's lora_A casts the layer input again (autocast caches only
         * leaves, not activations) and saves that copy */
        double h = m->hidden, q = (double)m->heads * m->head_dim;
        double I = m->experts ? 0 : m->intermediate;
        double ins = (targets(w, OD_LORA_Q) + targets(w, OD_LORA_K) + targets(w, OD_LORA_V)) * h +
                     targets(w, OD_LORA_O) * q + (m->gated_mlp ? targets(w, OD_LORA_GATE) : 0) * h +
                     targets(w, OD_LORA_UP) * h + targets(w, OD_LORA_DOWN) * I;
        *per_layer += 2 * ins / c->tp * c->N;
    }
}

/* diffusers' UNet2DConditionModel, level by level (a quarter of the pixels each level
 * down): a ResnetBlock2D saves its GroupNorms' inputs, the SiLUs' and the convolutions'
 * inputs (3 x its input channels + 3 x its output channels a pixel); a Transformer2DModel
 * its GroupNorm and proj_in input, and per BasicTransformerBlock three LayerNorms (input
 * and output), self-attention's q, k, v and output (flash), cross-attention's q and output
 * (its K/V of the text tokens), GEGLU's 8d projection, the GeLU and the product (28d a
 * pixel), and proj_out's input; downsamplers and upsamplers their convolution's input; the
 * up blocks' resnets read the skip concatenation. In the compute dtype. */
static double unet_saved(const ctx *c)
{
    const od_model *m = c->m;
    size_t n = m->unet_levels;
    double A = c->A, side = (double)m->latent_side, lpb = (double)m->unet_resnets;
    double text = (double)m->text_tokens;
#define RES(ci, co, P) ((3 * (ci) + 3 * (co)) * (P))
#define TRANS(d, t, P) ((t) ? (3 * (d) + (t) * 28 * (d)) * (P) + (t) * 2 * text * (d) : 0)
    double t = 4.0 * side * side + 3.0 * (double)m->unet_channels[0] * side * side; /* conv_in, norm_out/conv_out */
    double in = (double)m->unet_channels[0];
    for (size_t i = 0; i < n; i++) {
        double P = side * side / pow(4, (double)i), o = (double)m->unet_channels[i], tl = (double)m->unet_tlayers[i];
        for (double j = 0; j < lpb; j++)
            t += RES(j ? o : in, o, P) + TRANS(o, tl, P);
        if (i + 1 < n)
            t += o * P;
        in = o;
    }
    double cl = (double)m->unet_channels[n - 1], Pl = side * side / pow(4, (double)(n - 1));
    t += 2 * RES(cl, cl, Pl) + TRANS(cl, (double)(m->unet_tlayers[n - 1] ? m->unet_tlayers[n - 1] : 1), Pl);
    double prev = cl;
    for (size_t i = 0; i < n; i++) {
        size_t k = n - 1 - i;
        double P = side * side / pow(4, (double)k), o = (double)m->unet_channels[k];
        double skip_in = (double)m->unet_channels[k ? k - 1 : 0], tl = (double)m->unet_tlayers[k];
        for (double j = 0; j <= lpb; j++)
            t += RES((j ? o : prev) + (j == lpb ? skip_in : o), o, P) + TRANS(o, tl, P);
        if (k)
            t += o * P * 4; /* the upsampled map the conv reads */
        prev = o;
    }
#undef RES
#undef TRANS
    return t * A * c->B;
}

/* What one layer saves for the micro-batch (the whole UNet for a UNet). Encoder-decoders
 * whose encoder reads a fixed length (Whisper's 1500 positions): half the layers at that
 * length, half at the decoder's tokens. */
static void saved_per_layer(const ctx *c, double *per_layer, double *layer_full)
{
    const od_model *m = c->m;
    if (m->unet) {
        *per_layer = *layer_full = c->w->ckpt == OD_CKPT_FULL ? c->A * m->unet_channels[0] * m->latent_side *
                                                                    m->latent_side * c->B * 4
                                                              : unet_saved(c);
        if (c->w->ckpt == OD_CKPT_FULL)
            *layer_full = unet_saved(c) / (double)(m->unet_levels ? m->unet_levels : 1);
        return;
    }
    if (!(m->encdec && m->encoder_tokens)) {
        saved_at(c, per_layer, layer_full);
        return;
    }
    ctx e = *c;
    e.S = e.Sq = (double)m->encoder_tokens;
    e.N = e.B * e.S;
    double enc, enc_full, dec, dec_full;
    saved_at(&e, &enc, &enc_full);
    saved_at(c, &dec, &dec_full);
    *per_layer = (enc + dec) / 2;
    *layer_full = fmax(enc_full, dec_full);
}

/* Activations of a step on this GPU, in the pieces its phases combine. */
typedef struct {
    double per_layer, layer_full, acts, head_saved, logits_tr, fwd_extra, loss_grad;
    double copies, head_copy, head_grad;
} acts_t;

static void train_activations(const ctx *c, const states_t *s, acts_t *a)
{
    const od_model *m = c->m;
    const od_workload *w = c->w;
    /* an encoder has no LM head: its task head (a classifier) is negligible */
    double h = m->hidden, V = m->encoder ? 0 : (double)m->vocab, N = c->N, B = c->B, S = c->S;
    double tp = c->tp, L = m->layers ? (double)m->layers : 1;
    memset(a, 0, sizeof *a);
    saved_per_layer(c, &a->per_layer, &a->layer_full);
    /* frozen first layers see no input that requires grad: autograd saves nothing there */
    double train_frac = m->layers ? trained_layers(m, w) / L : 1;
    a->acts = c->Ls * c->inflight * a->per_layer * train_frac;
    if (m->tower2_layers && N > 0) /* the text tower beside it, per token at its width */
        a->acts += a->per_layer / N * ((double)m->tower2_hidden / h) * (double)m->tower2_tokens * B *
                   (double)m->tower2_layers * c->inflight;
    if (m->embd_dropout > 0 && c->first)
        a->acts += h * N / c->rep * c->inflight; /* embedding dropout mask */
    if (masked(c) && w->ckpt != OD_CKPT_FULL)
        a->acts += B * c->Sq * S * c->A; /* the additive sliding-window mask every layer saves */
    /* autocast casts each fp32 weight to bf16 once per forward (cached for leaves that
     * require grad) and linear saves the copy for backward */
    double Pm_stage = ((double)c->pc.matmul - V * h - (double)c->pc.experts) / L * c->Ls / tp;
    double head_w = c->last ? V * h / tp : 0;
    a->copies = c->amp ? Pm_stage * train_frac * 2 + head_w * 2 : 0;
    a->head_copy = c->amp ? head_w * 2 : 0;
    if (w->base_weights) {
        /* bitsandbytes' 4/8-bit matmuls keep the quantized weight for backward and
         * dequantize one at a time (the largest block linear, in 16 bits); a bf16 base
         * needs no autocast copy */
        double I = m->experts ? m->expert_intermediate : m->intermediate;
        a->copies = a->head_copy = 0;
        if (w->base_weights != OD_BASE_BF16)
            a->acts += 2 * h * fmax(I, (double)m->heads * m->head_dim) / tp;
    }
    a->acts += w->ckpt == OD_CKPT_FULL ? a->head_copy : a->copies;
    if (!c->last) /* the next stage holds the head */
        return;
    /* Head: final norm, logits, the loss. transformers' ForCausalLMLoss upcasts the
     * logits (logits.float()) and cross_entropy's log_softmax saves an fp32 result of
     * N x V; its backward holds that, the incoming gradient and its output. */
    double Nl = w->chunked_loss ? fmin(N, 4096) : N;   /* tokens whose logits coexist */
    a->head_saved = norm_saved(c, 1) * N + (w->chunked_loss ? 0 : 4 * V * N / tp);
    if (m->logit_softcap)
        a->head_saved += c->A * V * N / tp;
    if (w->chunked_loss)
        a->head_saved += 4 * h * N; /* fused linear-CE keeps d(hidden) from the forward */
    a->logits_tr = c->A * V * Nl / tp + (c->A != 4 ? 4 * V * Nl / tp : 0);
    if (w->chunked_loss)
        a->logits_tr += 4 * V * Nl / tp;
    if (c->amp)
        a->fwd_extra += 4 * h * N; /* final norm output (fp32) held by the model output */
    if (!strcmp(c->kernel, "eager"))
        a->fwd_extra += B * c->Sq * S * (c->amp ? 4 : c->A); /* the 4-D additive causal mask */
    if (w->ckpt == OD_CKPT_FULL && c->amp)
        a->fwd_extra += a->copies - a->head_copy; /* autocast cache lives until autocast exits */
    a->loss_grad = 2 * 4 * V * Nl / tp;
    a->head_grad = V * h * s->Wg / tp;
}

/* ---- training: the phases of a step ------------------------------------------------ */

static od_status train_phases(const ctx *c, const states_t *s, const acts_t *a, od_estimate *out,
                              od_error *err)
{
    const od_model *m = c->m;
    const od_workload *w = c->w;
    double N = c->N, Lp = c->Ls > 0 ? c->Ls : 1;
    /* two cuBLAS workspaces: the forward's thread and the autograd engine's device
     * thread each hold one (see od_workload.workspace_bytes) */
    double ws = 2.0 * (double)w->workspace_bytes;
    /* DeepSpeed and Megatron keep their gradient buffers (partitions, buckets) allocated */
    double grads_live = (w->grad_accum > 1 || c->inflight > 1 || w->deepspeed || w->megatron) ? s->grads : 0;
    double base = ws + s->params + s->states + grads_live + s->ddp_b;
    double after_fwd = base + a->acts + a->head_saved;
    double fwd = after_fwd + a->logits_tr + a->fwd_extra;
    /* one layer in flight during the forward (checkpointed layers drop it after) */
    if (w->ckpt == OD_CKPT_FULL)
        fwd = fmax(fwd, base + a->acts + a->layer_full + (c->amp ? a->copies : 0));
    double bwd = after_fwd + a->loss_grad;
    /* later in backward: logits gone, head gradient in, one layer's gradients live */
    double last_norm = c->last ? norm_saved(c, 1) * N : 0;
    double bwd2 = base + a->acts + last_norm + a->head_grad + layer_bwd_transient(c);
    if (w->ckpt == OD_CKPT_FULL)
        bwd2 += a->layer_full + (c->amp ? (a->copies - a->head_copy) / Lp : 0);
    double bwd_peak = fmax(bwd, bwd2);
    double opt = ws + s->params + s->states + s->grads + s->opt_temp + s->ddp_b;
    double first = fmax(fmax(fwd, bwd_peak) - s->states,
                        ws + s->params + s->grads + s->states + s->opt_temp + s->ddp_b);
    if (!(fmax(fmax(fwd, bwd_peak), fmax(opt, first)) < ABSURD_BYTES))
        return absurd(err);
    out->model_states_bytes = u(s->params + s->grads + s->states + s->ddp_b);
    out->host_bytes = u(s->host);
    out->nvme_bytes = u(s->nvme);
    out->forward_peak_bytes = u(fwd);
    out->backward_peak_bytes = u(bwd_peak);
    out->optimizer_peak_bytes = u(opt);
    out->first_step_peak_bytes = u(first);
    out->per_layer_activation_bytes = u(a->per_layer);
    out->activation_layers = c->Ls * c->inflight * (m->layers ? trained_layers(m, w) / m->layers : 1);

    od_breakdown *b = &out->at_peak;
    memset(b, 0, sizeof *b);
    b->parameters = u(s->params);
    b->optimizer_states = u(s->states);
    b->workspace = u(ws);
    if (opt >= fwd && opt >= bwd_peak) {
        out->peak_phase = "optimizer";
        b->gradients = u(s->grads + s->ddp_b);
        b->temporaries += u(s->opt_temp);
    } else {
        b->gradients = u(grads_live + s->ddp_b);
        b->activations = u(a->acts);
        double rest;
        if (bwd_peak >= fwd) {
            out->peak_phase = "backward";
            if (bwd >= bwd2) {
                b->logits_and_loss = u(a->head_saved + a->loss_grad);
                rest = 0;
            } else {
                b->gradients += u(a->head_grad);
                b->activations = u(a->acts + last_norm);
                rest = bwd2 - base - a->acts - last_norm - a->head_grad;
            }
        } else {
            out->peak_phase = "forward";
            b->logits_and_loss = u(a->head_saved + a->logits_tr);
            rest = fwd - after_fwd - a->logits_tr;
        }
        b->temporaries += u(rest);
    }
    out->peak_allocated_bytes = b->parameters + b->gradients + b->optimizer_states + b->activations +
                                b->logits_and_loss + b->kv_cache + b->temporaries + b->workspace;
    /* Reserve: the caching allocator rounds and cannot always reuse freed blocks of
     * other sizes. Measured on 21 runs: 1-12 % above the allocated peak, ~20 % with
     * checkpointing (recomputed layers free and re-request many mid-size blocks). */
    double slack = w->ckpt == OD_CKPT_FULL ? 0.2 : 0.07;
    out->peak_reserved_bytes = u(out->peak_allocated_bytes * (1 + slack) + 2 * MIB);
    return OD_OK;
}

/* One training step on stage r's GPUs. */
static od_status estimate_stage(ctx *c, uint64_t r, od_estimate *out, od_error *err)
{
    set_stage(c, r);
    states_t s;
    acts_t a;
    train_states(c, &s);
    train_activations(c, &s, &a);
    od_status st = train_phases(c, &s, &a, out, err);
    out->stage_layers = (uint64_t)(c->Ls + 0.5);
    out->stage_params = u(c->P);
    out->stage_name = c->w->pp < 2 ? "only" : c->first ? "first" : c->last ? "last" : "middle";
    return st;
}

/* The stage --stage asks for; the most loaded of the first and the last by default (a
 * middle stage holds fewer micro-batches than the first and no head). */
static od_status estimate_train(ctx *c, od_estimate *out, od_error *err)
{
    const od_workload *w = c->w;
    if (w->pp < 2 || w->stage == OD_STAGE_FIRST)
        return estimate_stage(c, 0, out, err);
    if (w->stage == OD_STAGE_LAST)
        return estimate_stage(c, w->pp - 1, out, err);
    od_estimate last = *out;
    od_status st = estimate_stage(c, w->pp - 1, &last, err);
    if (st != OD_OK)
        return st;
    st = estimate_stage(c, 0, out, err);
    if (st == OD_OK && last.peak_allocated_bytes > out->peak_allocated_bytes) {
        *out = last;
        set_stage(c, w->pp - 1);
    }
    return st;
}

/* ---- inference ------------------------------------------------------------------- */

/* The part of one token's KV cache a GPU holds under tp: its KV heads, at least one (tp
 * beyond the KV heads copies them); all of an MLA latent, which is not per head. */
static double kv_share(const od_model *m, uint64_t tp)
{
    if (m->kv_lora_rank || !m->kv_heads)
        return 1;
    uint64_t per = m->kv_heads / (tp ? tp : 1);
    return (double)(per ? per : 1) / (double)m->kv_heads;
}

/* Live bytes per token inside one layer of a no-grad forward: the caller's input, the
 * residual, the normed input and the widest stretch of the MLP (or attention). */
static double infer_layer_tok(const ctx *c)
{
    const od_model *m = c->m;
    double h = m->hidden, A = c->A;
    double q = (double)m->heads * m->head_dim, kv = (double)m->kv_heads * m->head_dim;
    double mlp;
    if (m->experts) {
        /* grouped_mm: every (token, expert) pair at once: gathered and sorted inputs,
         * gate_up, act(gate), product; then the accumulated output */
        double k = m->experts_per_token, Ie = m->expert_intermediate;
        mlp = k * (4 * Ie + 2 * h) + h + 4.0 * m->experts / A;
        if (m->shared_intermediate)
            mlp += h; /* the shared expert's output waits for the routed ones */
    } else if (m->gated_mlp) {
        mlp = (m->fused_gate_up ? 4 : 3) * m->intermediate;  /* act(gate), up, product */
    } else if (m->act == OD_ACT_GELU_NEW) {
        mlp = 4 * m->intermediate;  /* x, 0.5*x, and two links of the tanh chain */
    } else {
        mlp = 2 * m->intermediate;
    }
    double attn = 2 * (q + 2 * kv) + q;
    if (m->no_mlp)
        mlp = 0;
    if (m->ssm_layers) {
        /* a Mamba mixer: in_proj's output (x and the gate), the conv output, delta and
         * the scan output; dt, B, C are small */
        double mixer = 5.0 * m->ssm_inner + m->ssm_dt_rank + 2.0 * m->ssm_state;
        attn = m->ssm_layers < m->layers ? fmax(attn, mixer) : mixer;
    }
    double norm = (m->norm == OD_NORM_LAYER ? 1 : 1 + 2 * 4 / A) * h;
    double emb = (m->positions ? 2 : 1) * h; /* inputs_embeds (+ position embeds) locals */
    return A * (emb + 3 * h + fmax(fmax(mlp, attn), norm));
}

/* A UNet denoising step's activations (no grad): the skip connections of every down
 * level, held until their up block, and the largest level's working set (a resnet's input,
 * norm and conv outputs, a GEGLU's 8d projection: 16 x its channels a pixel). */
static double unet_infer_bytes(const ctx *c)
{
    const od_model *m = c->m;
    double side = (double)m->latent_side, skips = 0, work = 0;
    for (size_t i = 0; i < m->unet_levels; i++) {
        double P = side * side / pow(4, (double)i), ch = (double)m->unet_channels[i];
        skips += ((double)m->unet_resnets + 1) * ch * P;
        work = fmax(work, 16 * ch * P);
    }
    return (skips + work) * c->A * c->B;
}

/* Bytes per token one MoE layer of a decode step holds in transformers' batched_mm experts
 * (integrations/moe.py batched_mm_experts_forward): generate() switches the default
 * grouped_mm backend to batched_mm for the decode stage on GPU (docs: experts_interface.md,
 * "Decode-stage switching"), which gathers gate_up_proj[expert_ids] (2I x h) and
 * down_proj[expert_ids] (h x I) for every (token, expert) pair -- a copy of the expert's
 * weights per routed token -- beside the gathered input, gate_up's output, act(gate), the
 * product and the per-pair output. 0 for a dense model. */
static double moe_decode_tok(const ctx *c)
{
    const od_model *m = c->m;
    if (!m->experts || m->encoder)
        return 0;
    double k = m->experts_per_token, Ie = m->expert_intermediate / c->tp, h = m->hidden;
    return k * (3 * Ie * h * c->W + c->A * (2 * h + 4 * Ie));
}

/* Sum of the input widths K of one model's block linears as vLLM merges them (qkv, o,
 * gate_up, down; every expert's gate_up and down): GPTQ keeps an int32 g_idx of K each. */
static double linear_inputs(const od_model *m)
{
    double h = m->hidden, q = (double)m->heads * m->head_dim;
    double nmoe = (double)od_model_moe_layers(m), L = (double)m->layers;
    double attn = (L - (double)m->ssm_layers) * (h + q) + (double)m->ssm_layers * (h + m->ssm_inner);
    double dense = m->no_mlp ? 0 : (L - nmoe) * (h + m->intermediate);
    double moe = nmoe * (double)m->experts * (h + m->expert_intermediate);
    if (m->shared_intermediate)
        moe += nmoe * (h + m->shared_intermediate);
    return attn + dense + moe;
}

/* Bytes of all weights for inference: P parameters of which Pm sit in block linears
 * (quantizable); the rest (embeddings, lm_head, norms) stays 16-bit. Group size 128 for
 * GPTQ/AWQ (AutoGPTQ's and AutoAWQ's default): 4 bits + a 4-bit zero and a 16-bit scale
 * per 128 values (vLLM gptq.py / awq.py create_weights); bitsandbytes NF4: 4 bits + an
 * fp32 absmax per 64-value block; fp8: 1 byte + a per-tensor scale (vLLM fp8.py). */
static double inference_weight_bytes(const ctx *c, double P, double Pm)
{
    const od_model *m = c->m;
    double rest = (P - Pm) * 2, g = 128;
    switch (c->w->weights) {
    case OD_W_FP32: return 4 * P;
    case OD_W_INT8: return Pm + Pm / (double)m->hidden * 2 + rest;
    case OD_W_INT4: return Pm * (0.5 + 2.0 / 64) + rest;
    case OD_W_GPTQ4: return Pm * (0.5 + 0.5 / g + 2 / g) + 4 * linear_inputs(m) + rest;
    case OD_W_AWQ4: return Pm * (0.5 + 0.5 / g + 2 / g) + rest;
    case OD_W_NF4: return Pm * (0.5 + 4.0 / 64) + rest;
    case OD_W_FP8: return Pm + rest;
    default: return 2 * P;
    }
}

static od_status estimate_infer(ctx *c, od_estimate *out, od_error *err)
{
    const od_model *m = c->m;
    const od_workload *w = c->w;
    double h = m->hidden, V = m->encoder ? 0 : (double)m->vocab, B = (double)w->batch;
    double P = c->pc.total, Pm = c->pc.matmul - V * h; /* quantizable: not lm_head */
    double tp = c->tp;
    double weights;
    if (m->ckpt_params) /* the checkpoint's exact count */
        P = (double)m->ckpt_params;
    weights = inference_weight_bytes(c, P, Pm);
    if (w->weights >= OD_W_INT8 && !m->ckpt_quantized)
        out->quantized_params = u(Pm / tp);
    if (m->ckpt_quantized) /* packed weights + their scales load as stored */
        weights = (double)m->ckpt_weight_bytes;
    /* BertEmbeddings' position_ids and token_type_ids buffers (int64, one row each) */
    if (m->encoder && !m->vision)
        weights += 16.0 * (double)m->positions;
    weights /= tp;
    double kvb = w->kv_bytes ? w->kv_bytes : c->A;
    double L = m->layers;
    /* one layer's cache per token; od_model_kv_layer_tokens sums the tokens each layer
     * keeps (a sliding window caps what its layers hold) */
    double kv_tok_layer = od_model_kv_bytes_per_token(m, kvb) / L * kv_share(m, w->tp);
    double Pl = (double)w->prompt, T = Pl + (w->new_tokens ? w->new_tokens - 1 : 0);
    if (m->encoder) /* one forward over the input: nothing is generated */
        T = Pl;
    double tok = infer_layer_tok(c) / tp;
    if (m->unet && T > 0) /* the UNet's own working set, spread over its pixels */
        tok = unet_infer_bytes(c) / (B * T);
    double dup_tok = moe_decode_tok(c), moe_dup = 0; /* batched_mm's weight copies at the peak */
    out->moe_decode_copy_bytes_per_token = u(dup_tok);
    out->ssm_state_bytes_per_sequence = u(od_model_ssm_state_bytes(m, c->A) / tp);
    /* generate() keeps only the last position's logits (logits_to_keep=1) and copies
     * them to fp32 for the logits processors */
    double logits = B * V * (c->A + 4 + 4);
    if (m->encoder) /* the last hidden state of every position is the output */
        logits = B * Pl * h * c->A;
    double eager = 0;
    if (!strcmp(c->kernel, "eager"))
        eager = B * (m->heads / tp) * (c->A + 4);
    double ws = (double)w->workspace_bytes; /* one thread runs every matmul */
    double prefill, decode, kv_peak = 0, act_peak;
    switch (m->encoder ? OD_KV_NONE : w->kv_cache) {
    case OD_KV_NONE:
        /* every step re-runs the whole sequence: the last step (T tokens) is largest; an
         * MoE's decode steps run batched_mm over all of it */
        act_peak = tok * B * T + eager * T * T + logits;
        if (dup_tok && w->new_tokens > 1) {
            double pre = tok * B * Pl + eager * Pl * Pl + logits;
            moe_dup = dup_tok * B * T;
            act_peak = fmax(pre, act_peak + moe_dup);
            if (act_peak == pre)
                moe_dup = 0;
        }
        prefill = decode = act_peak;
        out->peak_phase = m->encoder ? "forward" : "decode";
        break;
    default: {
        double cap_tokens = T + 1;
        if (w->kv_cache == OD_KV_PAGED && w->paged_block)
            cap_tokens = ceil(cap_tokens / (double)w->paged_block) * (double)w->paged_block;
        double kv_final = kv_tok_layer * B *
                          od_model_kv_layer_tokens(m, w->kv_cache == OD_KV_DYNAMIC ? T : cap_tokens);
        double kv_prefill = w->kv_cache == OD_KV_DYNAMIC ? kv_tok_layer * B * od_model_kv_layer_tokens(m, Pl)
                                                         : kv_final;
        /* state-space layers: a fixed state per sequence, in the model's dtype, allocated
         * with the cache before the prefill */
        double state = od_model_ssm_state_bytes(m, c->A) * B / tp;
        /* an encoder of fixed length (Whisper): each decoder layer caches its cross-attention
         * K and V of the encoder's positions, and the prefill runs the encoder too */
        double enc = m->encdec && m->encoder_tokens ? (double)m->encoder_tokens : 0;
        state += 2.0 * (L / 2) * enc * (double)m->kv_heads * (double)m->head_dim * kvb * kv_share(m, w->tp) * B;
        kv_final += state;
        kv_prefill += state;
        double pre_act = tok * B * (Pl + enc) + eager * Pl * Pl + logits;
        prefill = kv_prefill + pre_act;
        /* DynamicCache grows by torch.cat: one layer's K (or V) exists twice */
        double dec_act = tok * B + eager * T + logits +
                         (w->kv_cache == OD_KV_DYNAMIC ? kv_tok_layer / 2 * B * od_model_kv_layer_tokens(m, T) / L : 0);
        double dec_dup = w->new_tokens > 1 ? dup_tok * B : 0;
        dec_act += dec_dup;
        decode = kv_final + dec_act;
        if (prefill >= decode) {
            out->peak_phase = "prefill";
            kv_peak = kv_prefill;
            act_peak = pre_act;
        } else {
            out->peak_phase = "decode";
            kv_peak = kv_final;
            act_peak = dec_act;
            moe_dup = dec_dup;
        }
    }
    }
    if (!(weights + ws + fmax(prefill, decode) < ABSURD_BYTES))
        return absurd(err);
    od_breakdown *b = &out->at_peak;
    memset(b, 0, sizeof *b);
    b->parameters = u(weights);
    out->model_states_bytes = b->parameters;
    out->kv_cache_bytes_per_token = u(kv_tok_layer * L);
    b->kv_cache = u(kv_peak);
    b->logits_and_loss = u(logits);
    b->temporaries = u(moe_dup);
    b->activations = u(act_peak - logits - moe_dup);
    b->workspace = u(ws);
    out->peak_allocated_bytes = b->parameters + b->kv_cache + b->logits_and_loss +
                                b->activations + b->temporaries + b->workspace;
    out->forward_peak_bytes = out->peak_allocated_bytes;
    out->backward_peak_bytes = out->optimizer_peak_bytes = 0;
    out->first_step_peak_bytes = out->peak_allocated_bytes;
    /* A growing sequence requests ever larger blocks, so freed ones are rarely reused. */
    double slack = w->kv_cache == OD_KV_NONE ? 0.5 : 0.15;
    out->peak_reserved_bytes = u(out->peak_allocated_bytes * (1 + slack) + 2 * MIB);
    return OD_OK;
}

/* Whether model and workload are what Korthikanti et al. assume: a GPT-2 block (LayerNorm,
 * 4h GeLU MLP, learned positions, biases), dropout 0.1 after attention and MLP and on the
 * attention probabilities, 16-bit activations, attention materialized. */
static int paper_case(const od_model *m, const od_workload *w)
{
    return w->task == OD_TASK_TRAIN && w->precision == OD_PREC_BF16 &&
           w->attention == OD_ATTN_EAGER && !strcmp(m->model_type, "gpt2") &&
           m->norm == OD_NORM_LAYER && !m->gated_mlp && !m->experts && m->positions &&
           m->intermediate == 4 * m->hidden && m->head_dim * m->heads == m->hidden &&
           m->kv_heads == m->heads && m->attn_dropout == 0.1 && m->resid_dropout == 0.1 &&
           m->act == OD_ACT_FUSED && !w->lora_rank && !w->freeze_layers;
}

/* The assumptions of a generate() estimate. */
static void noted_infer(const ctx *c, od_estimate *e)
{
    const od_model *m = c->m;
    const od_workload *w = c->w;
    assume(e, "peak during generate(): weights + KV cache + the prefill's or a decode step's transients",
           "transformers generation/utils.py; 3 measured generate() runs in tests/data (within 5.6%)");
    if (w->kv_cache == OD_KV_DYNAMIC)
        assume(e, "DynamicCache grows by torch.cat per step: old and new cache coexist for one layer",
               "transformers cache_utils.py DynamicCache.update");
    if (m->experts && w->new_tokens > 1)
        assume(e, "MoE decode steps run the batched_mm experts backend (generate() switches the default "
               "grouped_mm to it on GPU): every (token, expert) pair gathers a copy of its expert's "
               "gate_up and down weights; the prefill's grouped_mm copies none. Not checked against a "
               "measured MoE run",
               "transformers docs experts_interface.md (Decode-stage switching); "
               "integrations/moe.py batched_mm_experts_forward");
    if (w->weights >= OD_W_INT8 && !m->ckpt_quantized)
        assume(e, "quantized weights only in the block linears (attention, MLP, experts); embeddings, "
               "lm_head, norms and biases stay 16-bit",
               "vLLM quantization methods apply to LinearBase layers (lm_head unquantized by default); "
               "AutoGPTQ / AutoAWQ quantize the decoder's nn.Linear modules");
    if (w->weights == OD_W_INT4 && !m->ckpt_quantized)
        assume(e, "4-bit weights with an fp16 scale per 64-value group", "GPTQ (Frantar et al. 2022), AWQ (Lin et al. 2023)");
    if (w->weights == OD_W_INT8 && !m->ckpt_quantized)
        assume(e, "int8 weights with an fp16 scale per row", "LLM.int8() (Dettmers et al. 2022)");
    if ((w->weights == OD_W_GPTQ4 || w->weights == OD_W_AWQ4) && !m->ckpt_quantized)
        assume(e, w->weights == OD_W_GPTQ4
                      ? "GPTQ 4-bit, group 128: int32 qweight (K/8 x N), qzeros (K/128 x N/8), fp16 "
                        "scales (K/128 x N) and an int32 g_idx of K per merged linear"
                      : "AWQ 4-bit, group 128: int32 qweight (K x N/8), qzeros (K/128 x N/8), fp16 "
                        "scales (K/128 x N)",
               "vLLM model_executor/layers/quantization/gptq.py and awq.py (create_weights); "
               "group_size 128 as AutoGPTQ / AutoAWQ default");
    if (w->weights == OD_W_NF4 && !m->ckpt_quantized)
        assume(e, "NF4: 4-bit codes + an fp32 absmax per 64-value block (no double quantization, "
               "BitsAndBytesConfig's default)",
               "bitsandbytes Linear4bit / QLoRA (Dettmers et al. 2023); vLLM bitsandbytes.py");
    if (w->weights == OD_W_FP8 && !m->ckpt_quantized)
        assume(e, "fp8 e4m3 weights with one fp32 scale per tensor", "vLLM model_executor/layers/quantization/fp8.py");
}

/* The assumptions behind an estimate that succeeded (st), with their sources. */
static od_status noted(const ctx *c, od_estimate *e, od_status st)
{
    const od_model *m = c->m;
    const od_workload *w = c->w;
    if (st != OD_OK)
        return st;
    e->n_assumptions = 0;
    if (m->ckpt_params)
        assume(e, "parameter count and weight bytes read from the checkpoint's safetensors headers",
               "safetensors format (huggingface/safetensors README: 8-byte header length, JSON header)");
    else
        assume(e, "parameters counted from config.json as the transformers implementation lays them out",
               "transformers modeling_<family>.py; checked against published counts in tests/unit/test_hfconfig.c");
    if (m->ssm_layers)
        assume(e, "Mamba layers run transformers' fast path (mamba-ssm and causal-conv1d kernels installed; "
               "the slow fallback materializes batch x inner x seq x state tensors) and keep a fixed "
               "conv + SSM state per sequence in the model's dtype instead of a KV cache",
               "transformers modeling_mamba.py (MambaCache, cuda_kernels_forward), modeling_jamba.py "
               "(HybridMambaAttentionDynamicCache); mamba_ssm ops/selective_scan_interface.py");
    if (m->vision && !m->unet)
        assume(e, "an image is (image_size / patch_size)^2 patch tokens (+ a class token for ViT and CLIP), "
               "fixed by the config: --batch counts images; a classifier head is negligible",
               "transformers modeling_vit.py, modeling_clip.py, modeling_siglip.py; diffusers DiTTransformer2DModel");
    if (m->tower2_layers)
        assume(e, "CLIP / SigLIP train both towers: the text tower's parameters in full, its activations as the "
               "vision layer's per token scaled to its width, for its max_position_embeddings tokens",
               "transformers modeling_clip.py CLIPModel, modeling_siglip.py SiglipModel");
    if (m->encdec && m->encoder_tokens)
        assume(e, "Whisper: the encoder's layers see its 1500 positions (30 s of audio), the decoder's the target "
               "tokens; generate() keeps each decoder layer's cross-attention K/V of the 1500 for every sequence",
               "transformers modeling_whisper.py (WhisperEncoder, EncoderDecoderCache)");
    if (m->unet)
        assume(e, "UNet2DConditionModel from its config's levels: resnets, Transformer2DModel blocks (flash "
               "self-attention, cross-attention on 77 text tokens, GEGLU), skip connections; one denoising step "
               "of --batch latents; not checked against a measured run",
               "diffusers models/unets/unet_2d_condition.py, unet_2d_blocks.py, attention.py BasicTransformerBlock");
    if (m->eager_only)
        assume(e, "DeBERTa-v2's disentangled attention (content-to-position, position-to-content) has no "
               "SDPA or flash path: the scores are materialized",
               "transformers modeling_deberta_v2.py DisentangledSelfAttention");
    if (w->task == OD_TASK_INFER) {
        noted_infer(c, e);
        return st;
    }
    assume(e, "peak = torch.cuda.max_memory_allocated() of a steady-state step (optimizer state exists)",
           "PyTorch caching allocator; 25 measured training runs in tests/data (within 0.4%)");
    if (c->amp)
        assume(e, "autocast casts each fp32 weight to 16 bits once per forward and linear saves the copy",
               "PyTorch autocast weight cache (torch/csrc/autograd, Automatic Mixed Precision docs)");
    if (!w->chunked_loss && !m->encoder)
        assume(e, "the loss upcasts the logits to fp32 (N x V) and log_softmax saves an fp32 result",
               "transformers loss_utils.py ForCausalLMLoss; torch.nn.functional.cross_entropy");
    if (w->optimizer == OD_OPT_ADAMW && !w->deepspeed && !w->megatron)
        assume(e, "foreach AdamW allocates one temporary set of the moments' size (torch._foreach_sqrt)",
               "torch/optim/adamw.py _multi_tensor_adamw");
    if (w->optimizer == OD_OPT_ADAM8BIT || w->optimizer == OD_OPT_PAGED_ADAM8BIT)
        assume(e, "two uint8 states + an fp32 absmax per 256-value block",
               "bitsandbytes 8-bit optimizers (Dettmers et al. 2022, arXiv:2110.02861)");
    if (w->optimizer == OD_OPT_PAGED_ADAM8BIT)
        assume(e, "paged optimizer state counted as resident on the GPU (paged to the host only under pressure)",
               "bitsandbytes paged optimizers (QLoRA, Dettmers et al. 2023, arXiv:2305.14314)");
    if (w->base_weights == OD_BASE_NF4)
        assume(e, "NF4 base with double quantization: 0.5 + 1/64 + 4/16384 bytes per block-linear parameter",
               "QLoRA (Dettmers et al. 2023, arXiv:2305.14314), bitsandbytes Linear4bit");
    if (w->base_weights == OD_BASE_INT8)
        assume(e, "int8 base with an fp32 scale per row", "LLM.int8() (Dettmers et al. 2022), bitsandbytes Linear8bitLt");
    if (w->lora_rank)
        assume(e, "LoRA adapters A (in x r) and B (r x out) on each targeted projection, trained in fp32 under autocast",
               "LoRA (Hu et al. 2021, arXiv:2106.09685); peft tuners/lora");
    if (w->ckpt == OD_CKPT_FULL)
        assume(e, "full checkpointing keeps each layer's input and recomputes one layer at a time",
               "torch.utils.checkpoint; transformers gradient_checkpointing_enable");
    if (w->deepspeed && w->zero >= 3)
        assume(e, "DeepSpeed ZeRO-3: 4 x the largest module's own parameters (two gathered in 16 bits) + 18P/N "
               "(2P/N with the optimizer offloaded, none with the parameters too); host RAM per node x the "
               "buffer factor; NVMe: 16 B a parameter of optimizer state, 2 B of parameters, per node",
               "DeepSpeed runtime/zero/stage3.py estimate_zero3_model_states_mem_needs, model_to_params "
               "@ 007cca6; runtime/zero/offload_config.py (buffer_count, buffer_size, max_in_cpu)");
    else if (w->deepspeed)
        assume(e, "DeepSpeed ZeRO-2: 2P + 18P/N (16-bit gradients partitioned; docs/memory.rst's 4P + 16P/N "
               "predates PR #5099); ZeRO-1 4P + 16P/N, ZeRO-0 the same with N = 1; 2P with the optimizer "
               "offloaded; host RAM per node x the buffer factor",
               "DeepSpeed runtime/zero/stage_1_and_2.py estimate_zero2_model_states_mem_needs @ 02aa38c");
    else if (w->megatron)
        assume(e, w->zero ? "Megatron-Core distributed optimizer: 6 + 12/d bytes a parameter of the most loaded "
                            "shard (bf16 weight, fp32 main gradient, fp32 main weight and moments sharded); "
                            "the vocabulary padded to 128 x tp"
                          : "Megatron-Core: 18 bytes a parameter (bf16 weight, fp32 main gradient, fp32 main "
                            "weight, two fp32 moments); the vocabulary padded to 128 x tp",
               "Megatron-LM megatron/training/theoretical_memory_usage.py compute_weight_and_optimizer_memory "
               "@ 00caa53; arguments.py (accumulate_allreduce_grads_in_fp32 for bf16)");
    else if (w->fsdp)
        assume(e, "FSDP: fp32 flat-parameter shards; one unit (a layer) gathered in 16 bits plus the prefetched one; "
               "SHARD_GRAD_OP keeps the gathered parameters from forward through backward",
               "PyTorch FSDP docs (ShardingStrategy, MixedPrecision, BackwardPrefetch)");
    else if (w->zero)
        assume(e, "ZeRO stages: optimizer state (1), gradients (2), parameters (3) sharded across --dp GPUs",
               "ZeRO (Rajbhandari et al. 2020, arXiv:1910.02054)");
    if (w->ddp)
        assume(e, w->ddp_bucket_view ? "DDP gradients are views of its 25 MiB buckets: no extra copy"
                                     : "DDP's reducer holds a copy of every gradient in its 25 MiB buckets",
               "PyTorch DistributedDataParallel docs (bucket_cap_mb, gradient_as_bucket_view)");
    e->paper_layout = paper_case(m, w);
    if (e->paper_layout)
        assume(e, "this GPT-2 layout saves per layer what Korthikanti et al.'s Table 2 counts: "
               "sbh(10 + 24/t + 5as/(ht)), sbh/t(34 + 5as/h) with --sp, no 5as/h term with "
               "selective recomputation, 2sbh with full",
               "Korthikanti et al. 2022, Reducing Activation Recomputation in Large Transformer "
               "Models, arXiv:2205.05198, section 4, Table 2");
    if (w->tp > 1)
        assume(e, w->sp ? "tensor parallelism splits attention heads and the MLP width; --sp splits the "
                          "norms, dropouts and residual stream along the sequence as well"
                        : "tensor parallelism splits attention heads and the MLP width; norms, dropouts "
                          "and the residual stream stay whole on every GPU (--sp splits them)",
               "Megatron-LM (Shoeybi et al. 2019); Korthikanti et al. 2022, sections 4.2.1-4.2.2");
    if (w->cp > 1)
        assume(e, "context parallelism: each GPU holds seq/cp tokens' activations and K/V and gathers "
               "the other chunks' K/V ring-wise inside flash attention; weights, gradients and "
               "optimizer state stay whole on each cp GPU (shard them with --zero/--dp)",
               "Megatron-Core docs, api-guide/context_parallel.rst; get_batch_on_this_cp_rank (2cp chunks)");
    if (w->megatron)
        assume(e, "activations of Megatron-Core's TE transformer layer: fused norm + linear keep the norm input, "
               "its output and fp32 statistics; flash attention q, k, v, its output and log-sum-exp; fused "
               "SwiGLU its 2I input, fc2 the I product; MoE the router's fp32 logits and per routed token copy "
               "its permuted input, SwiGLU and output",
               "Megatron-LM megatron/core/transformer (transformer_layer.py, attention.py, mlp.py, moe/); "
               "TransformerEngine LayerNormLinear");
    if (c->mixed && !w->megatron && !w->deepspeed)
        assume(e, w->main_grads == OD_MAIN_GRADS_BF16 ? "mixed precision with the 16-bit gradients alone (--main-grads bf16)"
                                                     : "mixed precision keeps an fp32 main-gradient copy for the optimizer, "
                                                       "as DeepSpeed's fp32 gradient partition (--main-grads bf16 drops it)",
               "DeepSpeed runtime/zero/stage_1_and_2.py (single_partition_of_fp32_groups' gradients)");
    if (w->pp > 1)
        assume(e, "pipeline stage: the first holds the embedding, the last the final norm, the output layer (a copy "
               "of a tied embedding) and the loss; stage r holds min(pp - r, micro-batches) of its layers in "
               "flight (interleaved: 2(pp - r - 1) + (vpp - 1)pp + 1 chunks)",
               "Megatron-Core pipeline_parallel/schedules.py; theoretical_memory_usage.py (most loaded shard)");
    if (w->pp > 1)
        assume(e, w->vpp > 1 ? "interleaved 1F1B: the first stage holds its layers for pp micro-batches "
                               "x (1 + (pp-1)/(pp vpp))"
                             : "1F1B: the first stage holds its layers for up to pp micro-batches in flight",
               "Narayanan et al. 2021 (arXiv:2104.04473) section 2.2; Megatron-LM "
               "megatron/training/theoretical_memory_usage.py");
    return st;
}

/* Bytes a parameter takes in the inference weights' dtype (the quantized ones as
 * accelerate's table divides them: int8 a quarter, 4-bit an eighth of fp32). */
static double weight_dtype_bytes(od_weights wt)
{
    switch (wt) {
    case OD_W_FP32: return 4;
    case OD_W_INT8: case OD_W_FP8: return 1;
    case OD_W_INT4: case OD_W_GPTQ4: case OD_W_AWQ4: case OD_W_NF4: return 0.5;
    default: return 2;
    }
}

/* Megatron pads the vocabulary to a multiple of make_vocab_size_divisible_by (128) x tp
 * (megatron/training/tokenizer: _vocab_size_with_padding). */
static uint64_t megatron_vocab(uint64_t V, uint64_t tp)
{
    uint64_t q = 128 * (tp ? tp : 1);
    return (V + q - 1) / q * q;
}

/* Precision of a training step: autocast, mixed (16-bit weights, fp32 master) or plain,
 * the byte widths that follow, and the attention kernel. */
static od_status train_precision(ctx *c, od_error *err)
{
    const od_workload *w = c->w;
    const od_model *m = c->m;
    c->amp = w->precision == OD_PREC_AMP_BF16 || w->precision == OD_PREC_AMP_FP16;
    c->mixed = w->precision == OD_PREC_MIXED_FP16 || w->precision == OD_PREC_MIXED_BF16;
    if (w->fsdp && c->amp) {
        /* FSDP MixedPrecision(param_dtype=16-bit): fp32 shards, the forward in 16 bits on
         * the gathered parameters: no autocast copies, a 16-bit residual stream */
        c->amp = 0;
        c->W = 4;
        c->A = c->R = 2;
    } else {
        if ((w->deepspeed || w->megatron) && c->amp) {
            /* DeepSpeed's fp16/bf16 engine and Megatron's --bf16 hold half weights
             * themselves: no autocast copies */
            c->amp = 0;
            c->mixed = 1;
        }
        c->W = w->precision == OD_PREC_BF16 || c->mixed ? 2 : 4;
        c->A = w->precision == OD_PREC_FP32 ? 4 : 2;
        c->R = c->W;
    }
    if (w->main_grads && !c->mixed)
        return od_fail(err, OD_ERR_ARG, "--main-grads is the gradient buffer of mixed precision "
                       "(mixed-bf16, mixed-fp16, or amp under --framework deepspeed/megatron); "
                       "--precision %s keeps gradients in the weights' dtype", od_precision_name(w->precision));
    c->kernel = m->ssm_layers >= m->layers ? "none"
                : w->megatron && w->attention != OD_ATTN_EAGER ? "flash" : sdpa_kernel(c);
    if (w->cp > 1 && (!strcmp(c->kernel, "eager") || !strcmp(c->kernel, "math")))
        return od_fail(err, OD_ERR_ARG, "--cp needs a fused attention kernel (flash or "
                       "memory-efficient); this model and --attention %s run %s attention, "
                       "which context parallelism does not split", od_attention_name(w->attention),
                       c->kernel);
    return OD_OK;
}

od_status od_estimate_compute(const od_model *m0, const od_workload *w, od_estimate *out,
                              od_error *err)
{
    od_status st = check(m0, w, err);
    if (st != OD_OK)
        return st;
    od_model padded = *m0;
    if (w->megatron && w->task == OD_TASK_TRAIN)
        padded.vocab = megatron_vocab(m0->vocab, w->tp);
    const od_model *m = &padded;
    ctx c;
    memset(&c, 0, sizeof c);
    c.m = m;
    c.w = w;
    od_model_count(m, &c.pc);
    c.tp = (double)w->tp;
    c.ep_div = w->ep > 1 || w->etp > 1 ? (double)(w->ep ? w->ep : 1) * (double)(w->etp ? w->etp : w->tp)
                                       : c.tp;
    c.rep = 1;
    memset(out, 0, sizeof *out);
    out->params = m->ckpt_params && !w->megatron ? m->ckpt_params : c.pc.total;
    out->largest_module_params = c.pc.largest_module;
    if (w->task == OD_TASK_INFER) {
        c.A = w->weights == OD_W_FP32 ? 4 : 2;
        c.W = c.A;
        c.R = c.A;
        c.B = (double)w->batch;
        c.kernel = m->ssm_layers >= m->layers ? "none"
                   : w->attention == OD_ATTN_EAGER || m->alibi || m->eager_only ? "eager" : "flash";
        out->attention_kernel = c.kernel;
        out->largest_layer_bytes = u((double)c.pc.largest_layer * weight_dtype_bytes(w->weights));
        return noted(&c, out, estimate_infer(&c, out, err));
    }
    if ((st = train_precision(&c, err)) != OD_OK)
        return st;
    c.B = (double)w->batch;
    c.S = (double)w->seq;
    c.Sq = c.S / (double)(w->cp ? w->cp : 1);
    c.N = c.B * c.Sq;
    c.rep = w->sp ? c.tp : 1;
    out->attention_kernel = c.kernel;
    out->largest_layer_bytes = u((double)c.pc.largest_layer * c.W);
    out->kv_cache_bytes_per_token = u(od_model_kv_bytes_per_token(m, w->kv_bytes ? w->kv_bytes : c.A) *
                                      kv_share(m, w->tp));
    return noted(&c, out, estimate_train(&c, out, err));
}
