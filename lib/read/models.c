/* models.c - parameter layouts of the families oomdoc knows. */
#include "read/models.h"

#include <string.h>

/* Hard limits: a config past these is garbage, not a model (and keeps the uint64
 * arithmetic of the estimator far from overflow). */
#define MAX_DIM ((uint64_t)1 << 22)     /* hidden, intermediate, vocab, positions */
#define MAX_LAYERS 4096
#define MAX_EXPERTS 4096

uint64_t od_model_moe_layers(const od_model *m)
{
    if (!m->experts)
        return 0;
    uint64_t every = m->moe_every ? m->moe_every : 1;
    uint64_t first = m->moe_first_dense < m->layers ? m->moe_first_dense : m->layers;
    if (!m->moe_offset || m->moe_offset == every - 1)
        return (m->layers - first) / every;
    uint64_t n = 0;
    for (uint64_t i = first; i < m->layers; i++)
        n += i % every == m->moe_offset;
    return n;
}

double od_model_ssm_state_bytes(const od_model *m, double bytes)
{
    return (double)m->ssm_layers * (double)m->ssm_inner * (double)(m->ssm_conv + m->ssm_state) * bytes;
}

/* The largest tensor and the largest module's own parameters seen so far. */
typedef struct { uint64_t tensor, module; } biggest;

static void see(biggest *b, uint64_t tensor, uint64_t module)
{
    if (tensor > b->tensor)
        b->tensor = tensor;
    if (module > b->module)
        b->module = module;
}

/* One Mamba mixer: in_proj (h -> 2 inner), depthwise conv1d, x_proj (inner -> dt_rank +
 * 2 state), dt_proj (dt_rank -> inner, with bias), A_log, D, out_proj, and Jamba's three
 * RMSNorms (transformers MambaMixer / JambaMambaMixer). */
static uint64_t mixer_params(const od_model *m, biggest *largest)
{
    uint64_t h = m->hidden, di = m->ssm_inner, ds = m->ssm_state, r = m->ssm_dt_rank;
    uint64_t n = h * 2 * di + (m->ssm_proj_bias ? 2 * di : 0);
    n += di * m->ssm_conv + (m->ssm_conv_bias ? di : 0);
    n += di * (r + 2 * ds) + r * di + di + di * ds + di;
    n += di * h + (m->ssm_proj_bias ? h : 0);
    if (m->ssm_dt_norms)
        n += r + 2 * ds;
    see(largest, 2 * di * h, 2 * di * h + (m->ssm_proj_bias ? 2 * di : 0));
    return n;
}

double od_model_kv_bytes_per_token(const od_model *m, double kv_bytes)
{
    if (m->encoder)
        return 0;
    if (m->encdec) /* the decoder's self-attention; its cross-attention K/V are fixed */
        return 2.0 * (double)m->kv_heads * (double)m->head_dim * kv_bytes * (double)(m->layers / 2);
    double attn_layers = (double)(m->layers - (m->ssm_layers < m->layers ? m->ssm_layers : m->layers));
    if (m->kv_lora_rank)
        return (double)(m->kv_lora_rank + m->qk_rope_dim) * kv_bytes * attn_layers;
    return 2.0 * (double)m->kv_heads * (double)m->head_dim * kv_bytes * attn_layers;
}

double od_model_kv_layer_tokens(const od_model *m, double T)
{
    double L = (double)m->layers;
    if (!m->sliding_window || T <= (double)m->sliding_window)
        return L * T;
    double local = (double)(m->sliding_layers < m->layers ? m->sliding_layers : m->layers);
    return local * (double)m->sliding_window + (L - local) * T;
}

static uint64_t norm_params(const od_model *m)
{
    if (m->norm_no_params)
        return 0;
    return m->hidden * (m->norm_bias ? 2 : 1);
}

/* Attention projections of one layer; *largest is raised to the widest matrix. */
static uint64_t attn_params(const od_model *m, biggest *largest)
{
    uint64_t h = m->hidden, q = m->heads * m->head_dim, kv = m->kv_heads * m->head_dim;
    if (m->kv_lora_rank) {
        /* MLA: q (through a low-rank q_a/q_b pair when q_lora_rank is set), the joint
         * compressed kv_a (+ rope key), kv_b expanding to per-head keys and values, o */
        uint64_t H = m->heads, qk = m->qk_nope_dim + m->qk_rope_dim;
        uint64_t n = m->q_lora_rank ? h * m->q_lora_rank + m->q_lora_rank + m->q_lora_rank * H * qk
                                    : h * H * qk;
        n += h * (m->kv_lora_rank + m->qk_rope_dim) + m->kv_lora_rank;
        n += m->kv_lora_rank * H * (m->qk_nope_dim + m->v_head_dim);
        n += H * m->v_head_dim * h;
        uint64_t qw = m->q_lora_rank ? m->q_lora_rank * H * qk : h * H * qk;
        see(largest, qw, qw);
        see(largest, m->kv_lora_rank * H * (m->qk_nope_dim + m->v_head_dim),
            m->kv_lora_rank * H * (m->qk_nope_dim + m->v_head_dim));
        return n;
    }
    uint64_t attn = h * q + 2 * h * kv + q * h;
    if (m->qkv_bias)
        attn += q + 2 * kv;
    if (m->out_bias)
        attn += h;
    if (m->fused_qkv)
        see(largest, h * (q + 2 * kv), h * (q + 2 * kv) + (m->qkv_bias ? q + 2 * kv : 0));
    else
        see(largest, 0, h * q + (m->qkv_bias ? q : 0));
    see(largest, 0, q * h + (m->out_bias ? h : 0));
    return attn;
}

/* A gated or plain MLP of width w. */
static uint64_t mlp_params(const od_model *m, uint64_t w, biggest *largest)
{
    uint64_t h = m->hidden, n, b = m->mlp_bias;
    if (m->gated_mlp) {
        n = 3 * h * w + (b ? 2 * w + h : 0);
        uint64_t big = m->fused_gate_up ? 2 * h * w : h * w;
        see(largest, big, big + (b ? big / h : 0));
    } else {
        n = 2 * h * w + (b ? w + h : 0);
        see(largest, h * w, h * w + (b ? w : 0));
    }
    see(largest, 0, w * h + (b ? h : 0)); /* down / fc2 */
    return n;
}

/* A diffusers UNet: every parameter is in extra_params (hfconfig counted its blocks); the
 * largest module an up block's first conv over the skip concatenation, the largest unit
 * that block's resnet. */
static void unet_count(const od_model *m, od_param_counts *out)
{
    uint64_t c = m->unet_channels[m->unet_levels ? m->unet_levels - 1 : 0], ted = 4 * m->unet_channels[0];
    out->total = out->active = out->matmul = out->layers = m->extra_params;
    out->per_layer = m->extra_params;
    out->largest_tensor = 2 * c * c * 9;
    out->largest_module = 2 * c * c * 9 + c;
    out->largest_layer = 2 * c + 2 * c * c * 9 + c + ted * c + c + 2 * c + c * c * 9 + c + 2 * c * c + c;
}

void od_model_count(const od_model *m, od_param_counts *out)
{
    memset(out, 0, sizeof *out);
    if (m->unet) {
        unet_count(m, out);
        return;
    }
    uint64_t h = m->hidden;
    biggest largest = {m->vocab * h, m->vocab * h};
    see(&largest, m->positions * h, m->positions * h);
    uint64_t attn = attn_params(m, &largest);
    uint64_t norms = norm_params(m) * (m->parallel_block == 1 || m->no_mlp ? 1 : 2) *
                     (m->sandwich_norm ? 2 : 1);
    if (m->qk_norm == 1)
        norms += 2 * m->head_dim;                               /* per head (Qwen3, Gemma 3) */
    else if (m->qk_norm == 2)
        norms += (m->heads + m->kv_heads) * m->head_dim;        /* full width (OLMo 2, Cohere) */

    uint64_t dense = m->no_mlp ? 0 : mlp_params(m, m->intermediate, &largest);
    uint64_t moe = 0, moe_active = 0, routed = 0;
    if (m->experts) {
        /* transformers 5: one experts module of (E, 2I, h) and (E, h, I) tensors; 4: a
         * module per expert's linears */
        biggest per_expert = {0, 0};
        uint64_t one = mlp_params(m, m->expert_intermediate, &per_expert);
        routed = m->experts * one;
        if (m->transformers_major && m->transformers_major < 5)
            see(&largest, per_expert.tensor, per_expert.module);
        else
            see(&largest, m->experts * 2 * m->expert_intermediate * h, routed);
        uint64_t router = h * m->experts + (m->router_bias ? m->experts : 0);
        see(&largest, 0, router);
        moe = m->experts * one + router;                         /* experts + router */
        moe_active = m->experts_per_token * one + router;
        if (m->shared_intermediate) {
            uint64_t sh = mlp_params(m, m->shared_intermediate, &largest);
            moe += sh + (m->shared_gate ? h : 0);
            moe_active += sh + (m->shared_gate ? h : 0);
        }
    }
    uint64_t nmoe = od_model_moe_layers(m), ndense = m->layers - nmoe;
    uint64_t layers_total = ndense * (attn + norms + dense) + nmoe * (attn + norms + moe);
    uint64_t layers_active = ndense * (attn + norms + dense) + nmoe * (attn + norms + moe_active);
    if (m->ssm_layers) { /* mixers instead of attention in those layers */
        uint64_t ns = m->ssm_layers < m->layers ? m->ssm_layers : m->layers;
        uint64_t mix = mixer_params(m, &largest);
        layers_total = layers_total - ns * attn + ns * mix;
        layers_active = layers_active - ns * attn + ns * mix;
    }

    out->embedding = m->vocab * h + m->positions * h + m->type_vocab * h +
                     (m->embed_norm ? norm_params(m) : 0);
    uint64_t head, final_norm;
    if (m->encoder) {
        /* post-norm layers end normed; BertModel's pooler is one dense layer */
        head = m->pooler ? h * h + h : 0;
        final_norm = 0;
    } else {
        head = m->tied_embeddings ? 0 : m->vocab * h + (m->head_bias ? m->vocab : 0);
        final_norm = norm_params(m);
    }
    out->total = out->embedding + layers_total + final_norm + head + m->extra_params;
    out->active = out->embedding + layers_active + final_norm + head + m->extra_params;
    out->matmul = layers_total - m->layers * norms + (m->encoder ? head : m->vocab * h) +
                  m->extra_params;
    out->per_layer = m->layers ? layers_total / m->layers : 0;
    out->largest_tensor = largest.tensor;
    if (!m->encoder && !m->tied_embeddings)
        see(&largest, 0, m->vocab * h + (m->head_bias ? m->vocab : 0));
    out->largest_module = largest.module;
    out->layers = layers_total;
    out->head = out->total - out->embedding - layers_total;
    uint64_t dense_layer = attn + norms + dense, moe_layer = attn + norms + moe;
    if (m->ssm_layers >= m->layers && m->ssm_layers)
        dense_layer = dense_layer - attn + mixer_params(m, &(biggest){0, 0});
    uint64_t unit = ndense ? dense_layer : 0;
    if (nmoe && moe_layer > unit)
        unit = moe_layer;
    uint64_t tables = m->vocab * h > m->positions * h ? m->vocab * h : m->positions * h;
    if (!m->encoder && !m->tied_embeddings && m->vocab * h > tables)
        tables = m->vocab * h + (m->head_bias ? m->vocab : 0);
    out->largest_layer = unit > tables ? unit : tables;
    out->experts = nmoe * routed;
}

od_status od_model_validate(const od_model *m, od_error *err)
{
    struct { const char *name; uint64_t v, max; } f[] = {
        {"vocab_size", m->vision ? 1 : m->vocab, MAX_DIM}, {"hidden_size", m->hidden, MAX_DIM},
        {"num_hidden_layers", m->layers, MAX_LAYERS},
        {"num_attention_heads", m->heads, MAX_DIM},
        {"num_key_value_heads", m->kv_heads, MAX_DIM}, {"head_dim", m->head_dim, 65536},
        {"intermediate_size", m->intermediate, MAX_DIM},
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        if (f[i].v == 0)
            return od_fail(err, OD_ERR_FORMAT, "%s must be a positive integer", f[i].name);
        if (f[i].v > f[i].max)
            return od_fail(err, OD_ERR_LIMIT, "%s = %llu is absurdly large (limit %llu)",
                           f[i].name, (unsigned long long)f[i].v, (unsigned long long)f[i].max);
    }
    if (m->heads % m->kv_heads)
        return od_fail(err, OD_ERR_FORMAT,
                       "num_key_value_heads (%llu) must divide num_attention_heads (%llu)",
                       (unsigned long long)m->kv_heads, (unsigned long long)m->heads);
    if (m->positions > MAX_DIM)
        return od_fail(err, OD_ERR_LIMIT, "max positions = %llu is absurdly large",
                       (unsigned long long)m->positions);
    if (m->experts) {
        if (m->experts > MAX_EXPERTS)
            return od_fail(err, OD_ERR_LIMIT, "num_experts = %llu is absurdly large",
                           (unsigned long long)m->experts);
        if (!m->experts_per_token || m->experts_per_token > m->experts)
            return od_fail(err, OD_ERR_FORMAT,
                           "num_experts_per_tok must be between 1 and the number of experts");
        if (!m->expert_intermediate || m->expert_intermediate > MAX_DIM)
            return od_fail(err, OD_ERR_FORMAT, "expert intermediate size must be positive");
    }
    if (m->shared_intermediate > MAX_DIM)
        return od_fail(err, OD_ERR_LIMIT, "shared_expert_intermediate_size is absurdly large");
    if (m->q_lora_rank > 65536 || m->kv_lora_rank > 65536 || m->qk_rope_dim > 65536 ||
        m->qk_nope_dim > 65536 || m->v_head_dim > 65536)
        return od_fail(err, OD_ERR_LIMIT, "a multi-head latent attention size is absurdly large");
    if (m->kv_lora_rank && !m->v_head_dim)
        return od_fail(err, OD_ERR_FORMAT, "v_head_dim must be a positive integer");
    if (m->ssm_layers && (!m->ssm_inner || !m->ssm_state || !m->ssm_conv || !m->ssm_dt_rank ||
                          m->ssm_inner > MAX_DIM || m->ssm_state > 65536 || m->ssm_conv > 1024 ||
                          m->ssm_dt_rank > MAX_DIM || m->ssm_layers > m->layers))
        return od_fail(err, OD_ERR_FORMAT, "Mamba sizes (intermediate, state, conv kernel, time "
                       "step rank) must be positive and sane");
    if (m->type_vocab > MAX_DIM)
        return od_fail(err, OD_ERR_LIMIT, "type_vocab_size is absurdly large");
    if (!(m->attn_dropout >= 0 && m->attn_dropout < 1) ||
        !(m->resid_dropout >= 0 && m->resid_dropout < 1) ||
        !(m->embd_dropout >= 0 && m->embd_dropout < 1))
        return od_fail(err, OD_ERR_FORMAT, "dropout probabilities must be in [0, 1)");
    return OD_OK;
}

static void llama_defaults(od_model *m)
{
    memset(m, 0, sizeof *m);
    strcpy(m->model_type, "custom");
    m->gated_mlp = 1;
    m->norm = OD_NORM_RMS;
    m->act = OD_ACT_FUSED;
}

od_status od_model_from_sizes(uint64_t params, uint64_t layers, uint64_t hidden,
                              uint64_t heads, uint64_t kv_heads, uint64_t intermediate,
                              uint64_t vocab, od_model *out, od_error *err)
{
    od_model m;
    llama_defaults(&m);
    if (!layers || !hidden)
        return od_fail(err, OD_ERR_ARG, "--layers and --hidden are needed without --config");
    if (hidden > MAX_DIM || layers > MAX_LAYERS)
        return od_fail(err, OD_ERR_ARG, "--layers/--hidden are absurdly large");
    m.layers = layers;
    m.hidden = hidden;
    m.vocab = vocab ? vocab : 32000;
    m.heads = heads ? heads : (hidden >= 128 ? hidden / 128 : 1);
    if (hidden % m.heads)
        return od_fail(err, OD_ERR_ARG, "--heads (%llu) must divide --hidden (%llu)",
                       (unsigned long long)m.heads, (unsigned long long)hidden);
    m.kv_heads = kv_heads ? kv_heads : m.heads;
    m.head_dim = hidden / m.heads;
    if (intermediate) {
        m.intermediate = intermediate;
    } else if (params) {
        /* Solve params = 2*V*h + L*(attn + 3*h*I + 2*h) + h for I. */
        od_param_counts c;
        m.intermediate = 1;
        od_model_count(&m, &c);
        uint64_t one = c.total;           /* with I = 1 */
        if (params <= one)
            return od_fail(err, OD_ERR_ARG,
                           "--params %llu is too small for %llu layers of width %llu",
                           (unsigned long long)params, (unsigned long long)layers,
                           (unsigned long long)hidden);
        m.intermediate = 1 + (params - one) / (3 * hidden * layers);
        if (m.intermediate > MAX_DIM)
            return od_fail(err, OD_ERR_ARG, "--params is too large for these sizes");
    } else {
        /* Llama's convention: 8/3 * h rounded up to a multiple of 256. */
        m.intermediate = (8 * hidden / 3 + 255) / 256 * 256;
    }
    od_status st = od_model_validate(&m, err);
    if (st != OD_OK)
        return err ? (err->status = OD_ERR_ARG) : OD_ERR_ARG;
    *out = m;
    return OD_OK;
}
