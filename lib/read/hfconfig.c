/* hfconfig.c - config.json -> od_model, family by family. */
#include "read/hfconfig.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    json_t *root;
    od_error *err;
    od_status st;        /* first failure, sticky */
    const char *text;    /* the raw bytes, to point at the offending key */
    size_t len;
} reader;

/* Byte offset of the first "key" in the raw text (jansson keeps no positions). */
static int key_offset(const reader *r, const char *key, uint64_t *off)
{
    size_t k = strlen(key);
    for (size_t i = 0; i + k + 2 <= r->len; i++) {
        if (r->text[i] == '"' && !memcmp(r->text + i + 1, key, k) && r->text[i + k + 1] == '"') {
            *off = i;
            return 1;
        }
    }
    return 0;
}

static void fail(reader *r, od_status st, const char *fmt, const char *field)
{
    uint64_t off;
    if (r->st != OD_OK)
        return;
    if (strstr(fmt, "missing") == NULL && key_offset(r, field, &off))
        r->st = od_fail_at(r->err, st, off, fmt, field);
    else
        r->st = od_fail(r->err, st, fmt, field);
}

/* An integer field: absent -> dflt (or an error when dflt < 0); null -> dflt. */
static uint64_t get_uint(reader *r, const char *key, long long dflt)
{
    json_t *v = json_object_get(r->root, key);
    if (!v || json_is_null(v)) {
        if (dflt < 0)
            fail(r, OD_ERR_FORMAT, "missing field \"%s\" (a positive integer)", key);
        return dflt < 0 ? 0 : (uint64_t)dflt;
    }
    if (json_is_real(v)) {
        double d = json_real_value(v);
        if (d == floor(d) && d >= 0 && d < 9.0e15)
            return (uint64_t)d;
    }
    if (!json_is_integer(v)) {
        fail(r, OD_ERR_FORMAT, "field \"%s\" must be an integer", key);
        return 0;
    }
    json_int_t i = json_integer_value(v);
    if (i < 0) {
        fail(r, OD_ERR_FORMAT, "field \"%s\" must not be negative", key);
        return 0;
    }
    if ((unsigned long long)i > ((unsigned long long)1 << 40)) {
        fail(r, OD_ERR_LIMIT, "field \"%s\" is absurdly large", key);
        return 0;
    }
    return (uint64_t)i;
}

static double get_real(reader *r, const char *key, double dflt)
{
    json_t *v = json_object_get(r->root, key);
    if (!v || json_is_null(v))
        return dflt;
    if (!json_is_number(v)) {
        fail(r, OD_ERR_FORMAT, "field \"%s\" must be a number", key);
        return dflt;
    }
    double d = json_number_value(v);
    if (!(d >= 0 && d < 1)) {
        fail(r, OD_ERR_FORMAT, "field \"%s\" must be a probability in [0, 1)", key);
        return dflt;
    }
    return d;
}

static int get_bool(reader *r, const char *key, int dflt)
{
    json_t *v = json_object_get(r->root, key);
    if (!v || json_is_null(v))
        return dflt;
    if (!json_is_boolean(v)) {
        fail(r, OD_ERR_FORMAT, "field \"%s\" must be true or false", key);
        return dflt;
    }
    return json_is_true(v);
}

static const char *get_str(reader *r, const char *key, const char *dflt)
{
    json_t *v = json_object_get(r->root, key);
    if (!v || json_is_null(v))
        return dflt;
    if (!json_is_string(v)) {
        fail(r, OD_ERR_FORMAT, "field \"%s\" must be a string", key);
        return dflt;
    }
    return json_string_value(v);
}

/* Point r at the nested object key (MPT's attn_config, DBRX's ffn_config) and return
 * the previous root, to restore with r->root = prev; a missing key keeps the root. */
static json_t *enter(reader *r, const char *key)
{
    json_t *prev = r->root, *v = json_object_get(r->root, key);
    if (v && json_is_object(v))
        r->root = v;
    return prev;
}

/* How many entries of the layer_types list (newer configs) say "sliding_attention";
 * -1 without a list. */
static long long sliding_in_layer_types(reader *r)
{
    json_t *lt = json_object_get(r->root, "layer_types");
    if (!lt || !json_is_array(lt))
        return -1;
    long long n = 0;
    for (size_t i = 0; i < json_array_size(lt); i++) {
        const char *t = json_string_value(json_array_get(lt, i));
        if (t && !strcmp(t, "sliding_attention"))
            n++;
    }
    return n;
}

/* transformers' ACT2FN: only "gelu_new" (and its aliases) runs as a chain of Python
 * ops whose intermediates autograd keeps; everything else is one fused ATen op. */
static od_act_kind act_kind(const char *name)
{
    if (!strcmp(name, "gelu_new") || !strcmp(name, "gelu_fast") || !strcmp(name, "quick_gelu"))
        return OD_ACT_GELU_NEW;
    return OD_ACT_FUSED;
}

/* A Mamba time-step rank: an integer, or "auto" (transformers: ceil(hidden / 16)). */
static uint64_t dt_rank(reader *r, const char *key, uint64_t hidden)
{
    json_t *v = json_object_get(r->root, key);
    if (!v || json_is_null(v) || (json_is_string(v) && !strcmp(json_string_value(v), "auto")))
        return (hidden + 15) / 16;
    return get_uint(r, key, -1);
}

/* The fields every Llama-descended config shares. */
static void read_llama_like(reader *r, od_model *m)
{
    m->hidden = get_uint(r, "hidden_size", -1);
    m->layers = get_uint(r, "num_hidden_layers", -1);
    m->heads = get_uint(r, "num_attention_heads", -1);
    m->kv_heads = get_uint(r, "num_key_value_heads", (long long)m->heads);
    if (!m->kv_heads)
        m->kv_heads = m->heads;
    m->vocab = get_uint(r, "vocab_size", -1);
    m->intermediate = get_uint(r, "intermediate_size", -1);
    uint64_t hd = m->heads ? m->hidden / m->heads : 0;
    m->head_dim = get_uint(r, "head_dim", (long long)hd);
    if (!m->head_dim)
        m->head_dim = hd;
    m->gated_mlp = 1;
    m->norm = OD_NORM_RMS;
    m->act = act_kind(get_str(r, "hidden_act", get_str(r, "hidden_activation", "silu")));
    m->qkv_bias = m->out_bias = get_bool(r, "attention_bias", 0);
    m->mlp_bias = get_bool(r, "mlp_bias", 0);
    /* Qwen2 carries a window it does not use unless use_sliding_window is set */
    if (get_bool(r, "use_sliding_window", 1))
        m->sliding_window = get_uint(r, "sliding_window", 0);
    m->sliding_layers = m->layers;
    /* Llama 4: chunked local attention in the layers no_rope_layers marks 1 (3 in 4 by
     * default: every 4th layer is global) */
    m->attention_chunk = get_uint(r, "attention_chunk_size", 0);
    if (m->attention_chunk) {
        json_t *nr = json_object_get(r->root, "no_rope_layers");
        m->chunked_layers = m->layers - m->layers / 4;
        if (json_is_array(nr) && json_array_size(nr) == m->layers) {
            m->chunked_layers = 0;
            for (size_t i = 0; i < json_array_size(nr); i++)
                m->chunked_layers += json_integer_value(json_array_get(nr, i)) != 0;
        }
    }
    long long lt = sliding_in_layer_types(r);
    if (lt >= 0 && m->sliding_window)
        m->sliding_layers = (uint64_t)lt;
}

/* ---- family hooks: what a family's row in families.def cannot say ------------------ */

static void hook_gpt2(reader *r, od_model *m)
{
    m->positions = get_uint(r, "n_positions", 1024);
}

/* Qwen2: biases on q, k, v only */
static void hook_qkv_bias_only(reader *r, od_model *m)
{
    (void)r;
    m->qkv_bias = 1, m->out_bias = 0;
}

/* Gemma 2 / 3: local layers alternate with global ones (Gemma 2 every other layer, the
 * even ones; Gemma 3 all but every sliding_window_pattern-th) unless layer_types lists
 * them; a final tanh soft-cap when final_logit_softcapping is set. */
static void hook_gemma_local(reader *r, od_model *m)
{
    json_t *cap = json_object_get(r->root, "final_logit_softcapping");
    m->logit_softcap = cap && json_is_number(cap);
    if (sliding_in_layer_types(r) >= 0 || !m->sliding_window)
        return;
    if (!strcmp(m->model_type, "gemma2")) {
        m->sliding_layers = (m->layers + 1) / 2;
    } else {
        uint64_t pat = get_uint(r, "sliding_window_pattern", 6);
        m->sliding_layers = m->layers - (pat ? m->layers / pat : 0);
    }
}

static void hook_mixtral(reader *r, od_model *m)
{
    m->experts = get_uint(r, "num_local_experts", -1);
    m->experts_per_token = get_uint(r, "num_experts_per_tok", 2);
    m->expert_intermediate = m->intermediate;
}

/* Qwen2-MoE / Qwen3-MoE: MoE every decoder_sparse_step-th layer; Qwen2's shared expert
 * with its sigmoid gate and q/k/v biases */
static void hook_qwen_moe(reader *r, od_model *m)
{
    m->experts = get_uint(r, "num_experts", -1);
    m->experts_per_token = get_uint(r, "num_experts_per_tok", -1);
    m->expert_intermediate = get_uint(r, "moe_intermediate_size", -1);
    m->moe_every = get_uint(r, "decoder_sparse_step", 1);
    if (!m->moe_every)
        m->moe_every = 1;
    if (!strcmp(m->model_type, "qwen2_moe")) {
        m->qkv_bias = 1, m->out_bias = 0;
        m->shared_intermediate = get_uint(r, "shared_expert_intermediate_size", 0);
        m->shared_gate = m->shared_intermediate > 0;
    }
}

/* Falcon: multi-query (one KV head) unless new_decoder_architecture gives num_kv_heads;
 * one shared norm for the parallel attention and MLP, or a norm each (new arch) */
static void hook_falcon(reader *r, od_model *m)
{
    int newarch = get_bool(r, "new_decoder_architecture", 0);
    int mq = get_bool(r, "multi_query", 1);
    m->kv_heads = newarch ? get_uint(r, "num_kv_heads", (long long)m->heads) : (mq ? 1 : m->heads);
    m->qkv_bias = m->out_bias = m->mlp_bias = get_bool(r, "bias", 0);
    m->parallel_block = newarch ? 2 : get_bool(r, "parallel_attn", 1);
}

/* OPT: a learned position table with an offset of 2 rows */
static void hook_opt(reader *r, od_model *m)
{
    m->positions = get_uint(r, "max_position_embeddings", 2048) + 2;
    m->qkv_bias = m->out_bias = m->mlp_bias = get_bool(r, "enable_bias", 1);
    m->norm_bias = get_bool(r, "layer_norm_elementwise_affine", 1);
    m->norm_no_params = !m->norm_bias;
    if (get_uint(r, "word_embed_proj_dim", (long long)m->hidden) != m->hidden)
        fail(r, OD_ERR_FORMAT, "field \"%s\" different from hidden_size (OPT-350m's "
             "projections) is not modelled", "word_embed_proj_dim");
}

/* BLOOM: older configs spell the sizes n_embed and num_attention_heads; the MLP is 4h;
 * bloom_gelu_forward is the tanh formula in Python ops */
static void hook_bloom(reader *r, od_model *m)
{
    m->hidden = get_uint(r, json_object_get(r->root, "hidden_size") ? "hidden_size" : "n_embed", -1);
    m->layers = get_uint(r, "n_layer", -1);
    m->heads = m->kv_heads =
        get_uint(r, json_object_get(r->root, "n_head") ? "n_head" : "num_attention_heads", -1);
    m->vocab = get_uint(r, "vocab_size", -1);
    m->intermediate = 4 * m->hidden;
}

/* MPT: the attention settings nest in attn_config; learned positions without ALiBi;
 * always tied; transformers drops the LayerNorm biases */
static void hook_mpt(reader *r, od_model *m)
{
    m->intermediate = get_uint(r, "expansion_ratio", 4) * m->hidden;
    json_t *prev = enter(r, "attn_config");
    m->alibi = get_bool(r, "alibi", 1);
    m->attn_dropout = get_real(r, "attn_pdrop", 0.0);
    r->root = prev;
    if (!m->alibi)
        m->positions = get_uint(r, "max_seq_len", 2048);
    m->tied_embeddings = 1;
}

static void hook_phi(reader *r, od_model *m)
{
    (void)m;
    if (get_bool(r, "qk_layernorm", 0))
        fail(r, OD_ERR_FORMAT, "field \"%s\" true is not modelled", "qk_layernorm");
}

/* StarCoder2: one use_bias for every linear */
static void hook_use_bias(reader *r, od_model *m)
{
    m->qkv_bias = m->out_bias = m->mlp_bias = get_bool(r, "use_bias", 1);
}

/* Cohere: per-head q/k norm weights (heads x head_dim each) when use_qk_norm */
static void hook_cohere(reader *r, od_model *m)
{
    if (get_bool(r, "use_qk_norm", 0))
        m->qk_norm = 2;
}

/* DeepSeek-V2/V3: multi-head latent attention; routed + shared experts after
 * first_k_dense_replace dense layers; V3's per-expert score bias */
static void hook_deepseek(reader *r, od_model *m)
{
    m->kv_heads = m->heads;
    m->q_lora_rank = get_uint(r, "q_lora_rank", 0);
    m->kv_lora_rank = get_uint(r, "kv_lora_rank", -1);
    m->qk_rope_dim = get_uint(r, "qk_rope_head_dim", -1);
    m->qk_nope_dim = get_uint(r, "qk_nope_head_dim", -1);
    m->v_head_dim = get_uint(r, "v_head_dim", -1);
    m->head_dim = m->qk_nope_dim + m->qk_rope_dim;
    m->experts = get_uint(r, "n_routed_experts", 0);
    if (m->experts) {
        m->experts_per_token = get_uint(r, "num_experts_per_tok", -1);
        m->expert_intermediate = get_uint(r, "moe_intermediate_size", -1);
        m->shared_intermediate = get_uint(r, "n_shared_experts", 0) * m->expert_intermediate;
        m->moe_first_dense = get_uint(r, "first_k_dense_replace", 0);
        m->moe_every = get_uint(r, "moe_layer_freq", 1);
        m->router_bias = !strcmp(m->model_type, "deepseek_v3");
    }
    if (!m->moe_every)
        m->moe_every = 1;
}

/* DBRX: attention and experts nest in attn_config and ffn_config */
static void hook_dbrx(reader *r, od_model *m)
{
    json_t *prev = enter(r, "attn_config");
    m->kv_heads = get_uint(r, "kv_n_heads", (long long)m->heads);
    m->attn_dropout = get_real(r, "attn_pdrop", 0.0);
    r->root = prev;
    prev = enter(r, "ffn_config");
    m->expert_intermediate = get_uint(r, "ffn_hidden_size", -1);
    m->experts = get_uint(r, "moe_num_experts", -1);
    m->experts_per_token = get_uint(r, "moe_top_k", 1);
    r->root = prev;
    m->intermediate = m->expert_intermediate;
}

/* T5ForConditionalGeneration: a shared embedding, an encoder and a decoder of
 * self-attention (+ cross-attention) and a ReLU or gated-GELU MLP, RMS norms with weights
 * only, relative position biases in each stack's first layer */
static void hook_t5(reader *r, od_model *m)
{
    uint64_t enc = m->layers, dec = get_uint(r, "num_decoder_layers", (long long)enc);
    m->layers = enc + dec;
    m->head_dim = get_uint(r, "d_kv", -1);
    m->gated_mlp = !strncmp(get_str(r, "feed_forward_proj", "relu"), "gated-", 6);
    uint64_t inner = m->heads * m->head_dim, buckets = get_uint(r, "relative_attention_num_buckets", 32);
    m->extra_params = dec * (4 * m->hidden * inner + m->hidden) + 2 * buckets * m->heads + m->hidden;
}

/* BERT / RoBERTa: learned positions and token types */
static void hook_bert(reader *r, od_model *m)
{
    m->positions = get_uint(r, "max_position_embeddings", 512);
    m->type_vocab = get_uint(r, "type_vocab_size", 2);
}

/* MambaForCausalLM: embeddings, blocks of RMSNorm + MambaMixer (no attention, no MLP),
 * norm_f, a tied lm_head (modeling_mamba.py) */
static void hook_mamba(reader *r, od_model *m)
{
    m->ssm_state = get_uint(r, "state_size", 16);
    m->ssm_conv = get_uint(r, "conv_kernel", 4);
    m->ssm_inner = get_uint(r, "intermediate_size", (long long)(get_uint(r, "expand", 2) * m->hidden));
    m->ssm_dt_rank = dt_rank(r, "time_step_rank", m->hidden);
    m->ssm_conv_bias = get_bool(r, "use_conv_bias", 1);
    m->ssm_proj_bias = get_bool(r, "use_bias", 0);
    m->ssm_layers = m->layers;
    m->no_mlp = 1;
    /* no attention: one nominal head of the full width keeps the shared checks */
    m->heads = m->kv_heads = 1;
    m->head_dim = m->hidden;
    m->intermediate = m->ssm_inner;
}

/* JambaForCausalLM: attention in the layers i % attn_layer_period == attn_layer_offset,
 * Mamba mixers (with dt/B/C RMSNorms) in the rest; a sparse MoE in the layers
 * i % expert_layer_period == expert_layer_offset, a gated MLP elsewhere (modeling_jamba.py) */
static void hook_jamba(reader *r, od_model *m)
{
    m->sliding_window = 0;
    uint64_t ap = get_uint(r, "attn_layer_period", 8), ao = get_uint(r, "attn_layer_offset", 4);
    uint64_t attn = 0;
    json_t *lbt = json_object_get(r->root, "layers_block_type");
    if (json_is_array(lbt) && json_array_size(lbt) == m->layers) {
        for (size_t i = 0; i < json_array_size(lbt); i++) {
            const char *t = json_string_value(json_array_get(lbt, i));
            attn += t && !strcmp(t, "attention");
        }
    } else {
        for (uint64_t i = 0; ap && i < m->layers; i++)
            attn += i % ap == ao;
    }
    m->ssm_layers = m->layers - attn;
    m->ssm_inner = get_uint(r, "mamba_expand", 2) * m->hidden;
    m->ssm_state = get_uint(r, "mamba_d_state", 16);
    m->ssm_conv = get_uint(r, "mamba_d_conv", 4);
    m->ssm_dt_rank = dt_rank(r, "mamba_dt_rank", m->hidden);
    m->ssm_conv_bias = get_bool(r, "mamba_conv_bias", 1);
    m->ssm_proj_bias = get_bool(r, "mamba_proj_bias", 0);
    m->ssm_dt_norms = 1;
    uint64_t ne = get_uint(r, "num_experts", 16);
    if (ne > 1) {
        m->experts = ne;
        m->experts_per_token = get_uint(r, "num_experts_per_tok", 2);
        m->expert_intermediate = m->intermediate;
        m->moe_every = get_uint(r, "expert_layer_period", 2);
        m->moe_offset = get_uint(r, "expert_layer_offset", 1);
        if (!m->moe_every || m->moe_offset >= m->moe_every)
            fail(r, OD_ERR_FORMAT, "field \"%s\" must be below expert_layer_period",
                 "expert_layer_offset");
    }
}

/* Whether the DeBERTa pos_att_type (a list, or a "p2c|c2p" string as the published
 * configs write it) names kind. */
static int pos_att_has(json_t *pt, const char *kind)
{
    int has = json_is_string(pt) && strstr(json_string_value(pt), kind);
    for (size_t i = 0; json_is_array(pt) && i < json_array_size(pt); i++) {
        const char *t = json_string_value(json_array_get(pt, i));
        has |= t && !strcmp(t, kind);
    }
    return has;
}

/* DebertaV2Model: BERT-like encoder with disentangled attention: relative position
 * embeddings (2 x position_buckets rows, or 2 x max_relative_positions), projected by the
 * layer's own key/query projections when share_att_key, else by per-layer pos_key_proj /
 * pos_query_proj; no absolute positions unless position_biased_input; no pooler
 * (modeling_deberta_v2.py) */
static void hook_deberta(reader *r, od_model *m)
{
    uint64_t maxpos = get_uint(r, "max_position_embeddings", 512);
    m->positions = get_bool(r, "position_biased_input", 1) ? maxpos : 0;
    m->type_vocab = get_uint(r, "type_vocab_size", 0);
    if (get_uint(r, "conv_kernel_size", 0))
        fail(r, OD_ERR_FORMAT, "field \"%s\" (DeBERTa-v2's ConvLayer) is not modelled",
             "conv_kernel_size");
    if (json_object_get(r->root, "embedding_size") && get_uint(r, "embedding_size", 0) != m->hidden)
        fail(r, OD_ERR_FORMAT, "field \"%s\" other than hidden_size (an embedding "
             "projection) is not modelled", "embedding_size");
    if (!get_bool(r, "relative_attention", 0))
        return;
    json_t *mr = json_object_get(r->root, "max_relative_positions");
    uint64_t rel = json_is_integer(mr) && json_integer_value(mr) > 0 ? (uint64_t)json_integer_value(mr)
                                                                   : maxpos;
    json_t *pb = json_object_get(r->root, "position_buckets");
    if (json_is_integer(pb) && json_integer_value(pb) > 0)
        rel = (uint64_t)json_integer_value(pb);
    m->extra_params = 2 * rel * m->hidden;
    if (strstr(get_str(r, "norm_rel_ebd", "none"), "layer_norm"))
        m->extra_params += 2 * m->hidden;
    if (get_bool(r, "share_att_key", 0))
        return;
    json_t *pt = json_object_get(r->root, "pos_att_type");
    /* pos_key_proj (c2p), pos_query_proj (p2c) in each layer */
    if (pos_att_has(pt, "c2p"))
        m->extra_params += m->layers * (m->hidden * m->hidden + m->hidden);
    if (pos_att_has(pt, "p2c"))
        m->extra_params += m->layers * (m->hidden * m->hidden + m->hidden);
}

/* BartForConditionalGeneration: a shared embedding, learned positions (+2 offset rows)
 * and an embedding LayerNorm in each stack, post-norm encoder and decoder layers (the
 * decoder's with cross-attention), biases everywhere, the lm_head tied to the shared
 * embedding (modeling_bart.py) */
static void hook_bart(reader *r, od_model *m)
{
    uint64_t enc = get_uint(r, "encoder_layers", -1), dec = get_uint(r, "decoder_layers", -1);
    m->layers = enc + dec;
    if (get_uint(r, "decoder_attention_heads", (long long)m->heads) != m->heads ||
        get_uint(r, "decoder_ffn_dim", (long long)m->intermediate) != m->intermediate)
        fail(r, OD_ERR_FORMAT, "field \"%s\" differing from the encoder's is not modelled",
             "decoder_ffn_dim");
    uint64_t pos = get_uint(r, "max_position_embeddings", 1024) + 2, h = m->hidden;
    /* cross-attention + its LayerNorm per decoder layer, both position tables, the
     * second embedding LayerNorm (the first stands where a final norm would) */
    m->extra_params = dec * (4 * h * h + 4 * h + 2 * h) + 2 * pos * h + 2 * h;
    if (get_bool(r, "add_final_layer_norm", 0)) /* a LayerNorm after each stack */
        m->extra_params += 2 * 2 * h;
}

/* GPT-NeoX: biases unless attention_bias is false; parallel residual with a norm each */
static void hook_neox(reader *r, od_model *m)
{
    m->qkv_bias = m->out_bias = m->mlp_bias = get_bool(r, "attention_bias", 1);
    m->parallel_block = get_bool(r, "use_parallel_residual", 1) ? 2 : 0;
}

/* ---- vision, speech and diffusion ------------------------------------------------- */

/* Patches of a square image: (image_size / patch_size)^2; 0 (and a failure) when the
 * patch does not tile the image. */
static uint64_t patches(reader *r, uint64_t dflt_image, uint64_t dflt_patch)
{
    uint64_t img = get_uint(r, "image_size", (long long)dflt_image), p = get_uint(r, "patch_size", (long long)dflt_patch);
    if (r->st == OD_OK && (!p || !img || img % p || img / p > 4096))
        fail(r, OD_ERR_FORMAT, "field \"%s\" must tile image_size", "patch_size");
    return r->st == OD_OK ? (img / p) * (img / p) : 0;
}

/* Whether architectures names an image classifier; its label count (id2label, else
 * num_labels, else 2). */
static uint64_t classifier_labels(reader *r)
{
    json_t *a = json_object_get(r->root, "architectures");
    const char *arch = json_is_array(a) ? json_string_value(json_array_get(a, 0)) : NULL;
    if (!arch || !strstr(arch, "ForImageClassification"))
        return 0;
    json_t *labels = json_object_get(r->root, "id2label");
    if (json_is_object(labels) && json_object_size(labels))
        return json_object_size(labels);
    return get_uint(r, "num_labels", 2);
}

/* ViTModel / ViTForImageClassification: a patch Conv2d (with bias), a class token, learned
 * positions for the patches + 1, pre-norm layers, a final LayerNorm; the classifier, or
 * ViTModel's pooler (modeling_vit.py). */
static void hook_vit(reader *r, od_model *m)
{
    uint64_t n = patches(r, 224, 16), ch = get_uint(r, "num_channels", 3), h = m->hidden;
    m->vision = 1;
    m->image_tokens = m->positions = n + 1;
    m->qkv_bias = get_bool(r, "qkv_bias", 1);
    m->out_bias = 1;
    m->extra_params = ch * get_uint(r, "patch_size", 16) * get_uint(r, "patch_size", 16) * h + h + h + 2 * h;
    uint64_t labels = classifier_labels(r);
    m->pooler = !labels;
    m->extra_params += labels ? h * labels + labels : 0;
}

/* CLIPVisionModel: a patch Conv2d without bias, a class embedding, positions for the
 * patches + 1, pre_layrnorm and post_layernorm (modeling_clip.py). */
static void hook_clip_vision(reader *r, od_model *m)
{
    uint64_t n = patches(r, 224, 32), ch = get_uint(r, "num_channels", 3), h = m->hidden, p = get_uint(r, "patch_size", 32);
    m->vision = 1;
    m->image_tokens = m->positions = n + 1;
    m->extra_params = ch * p * p * h + h + 2 * h + 2 * h;
}

/* SiglipVisionModel: a patch Conv2d with bias, positions for the patches (no class token),
 * post_layernorm and, with vision_use_head, the attention-pooling head: a probe, an
 * nn.MultiheadAttention, a LayerNorm and an MLP (modeling_siglip.py). */
static void hook_siglip_vision(reader *r, od_model *m)
{
    uint64_t n = patches(r, 224, 16), ch = get_uint(r, "num_channels", 3), h = m->hidden, p = get_uint(r, "patch_size", 16);
    uint64_t I = m->intermediate;
    m->vision = 1;
    m->image_tokens = m->positions = n;
    m->extra_params = ch * p * p * h + h + 2 * h;
    if (get_bool(r, "vision_use_head", 1))
        m->extra_params += h + (3 * h * h + 3 * h) + (h * h + h) + 2 * h + (h * I + I) + (I * h + h);
}

/* WhisperForConditionalGeneration: two Conv1d over the mel bins, learned encoder positions
 * (max_source_positions, fixed 1500 for 30 s) and decoder positions, pre-norm layers whose
 * k_proj has no bias, the decoder's cross-attention, a LayerNorm after each stack, proj_out
 * tied to the decoder's embedding (modeling_whisper.py). */
static void hook_whisper(reader *r, od_model *m)
{
    uint64_t enc = get_uint(r, "encoder_layers", -1), dec = get_uint(r, "decoder_layers", -1), d = m->hidden;
    m->layers = enc + dec;
    if (get_uint(r, "decoder_attention_heads", (long long)m->heads) != m->heads ||
        get_uint(r, "decoder_ffn_dim", (long long)m->intermediate) != m->intermediate)
        fail(r, OD_ERR_FORMAT, "field \"%s\" differing from the encoder's is not modelled", "decoder_ffn_dim");
    uint64_t mel = get_uint(r, "num_mel_bins", 80), src = get_uint(r, "max_source_positions", 1500);
    uint64_t tgt = get_uint(r, "max_target_positions", 448);
    m->qkv_bias = 0; /* q and v have biases, k none: added below */
    m->encoder_tokens = src;
    m->max_positions = tgt;
    m->extra_params = (mel * d * 3 + d) + (d * d * 3 + d) + src * d + tgt * d + 2 * d + m->layers * 2 * d +
                      dec * (4 * d * d + 3 * d + 2 * d);
}

/* A per-level list (an integer means every level) into out[n]. */
static void levels(reader *r, const char *key, uint64_t dflt, uint64_t *out, size_t n)
{
    json_t *v = json_object_get(r->root, key);
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_is_array(v) ? json_array_get(v, i < json_array_size(v) ? i : json_array_size(v) - 1) : v;
        out[i] = json_is_integer(e) && json_integer_value(e) > 0 && json_integer_value(e) < (1 << 20)
                     ? (uint64_t)json_integer_value(e) : dflt;
    }
}

/* diffusers' UNet2DConditionModel pieces (models/unets/unet_2d_blocks.py, resnet.py,
 * transformers/transformer_2d.py, attention.py BasicTransformerBlock with a GEGLU
 * feed-forward). */
static uint64_t unet_resnet(uint64_t i, uint64_t o, uint64_t ted)
{
    return 2 * i + i * o * 9 + o + ted * o + o + 2 * o + o * o * 9 + o + (i != o ? i * o + o : 0);
}

static uint64_t unet_transformer(uint64_t d, uint64_t t, uint64_t cross)
{
    uint64_t block = 2 * d + (4 * d * d + d) + 2 * d + (2 * d * d + 2 * cross * d + d) + 2 * d +
                     (d * 8 * d + 8 * d) + (4 * d * d + d);
    return 2 * d + (d * d + d) + t * block + (d * d + d);
}

/* UNet2DConditionModel: conv_in, the timestep embedding (and SDXL's text_time embedding),
 * down blocks (resnets, transformers where CrossAttn, a downsampler but the last), the mid
 * block, up blocks of layers_per_block + 1 resnets over the skip connections, conv_out. The
 * parameters go to extra_params; the levels stay for the activations. */
static void hook_unet(reader *r, od_model *m)
{
    json_t *ch = json_object_get(r->root, "block_out_channels");
    json_t *down = json_object_get(r->root, "down_block_types"), *up = json_object_get(r->root, "up_block_types");
    size_t n = json_is_array(ch) ? json_array_size(ch) : 0;
    if (!n || n > 6 || !json_is_array(down) || !json_is_array(up) || json_array_size(down) != n ||
        json_array_size(up) != n) {
        fail(r, OD_ERR_FORMAT, "field \"%s\" (1 to 6 levels, as many down and up blocks) is missing", "block_out_channels");
        return;
    }
    uint64_t c[6], t[6], lpb = get_uint(r, "layers_per_block", 2), cross;
    levels(r, "block_out_channels", 0, c, n);
    levels(r, "transformer_layers_per_block", 1, t, n);
    levels(r, "cross_attention_dim", 768, &cross, 1);
    for (size_t i = 0; i < n; i++)
        if (!c[i] || c[i] > 65536)
            fail(r, OD_ERR_FORMAT, "field \"%s\" must list positive channel counts", "block_out_channels");
    if (r->st != OD_OK)
        return;
    uint64_t in_ch = get_uint(r, "in_channels", 4), out_ch = get_uint(r, "out_channels", 4), c0 = c[0], ted = 4 * c0;
    uint64_t p = in_ch * c0 * 9 + c0 + c0 * ted + ted + ted * ted + ted;
    const char *add = get_str(r, "addition_embed_type", NULL);
    if (add && !strcmp(add, "text_time")) {
        uint64_t pcid = get_uint(r, "projection_class_embeddings_input_dim", -1);
        p += pcid * ted + ted + ted * ted + ted;
    }
    uint64_t inp = c0;
    for (size_t i = 0; i < n; i++) {
        const char *type = json_string_value(json_array_get(down, i));
        int attn = type && !strncmp(type, "CrossAttn", 9);
        for (uint64_t j = 0; j < lpb; j++)
            p += unet_resnet(j ? c[i] : inp, c[i], ted) + (attn ? unet_transformer(c[i], t[i], cross) : 0);
        if (i + 1 < n)
            p += c[i] * c[i] * 9 + c[i];
        inp = c[i];
        m->unet_tlayers[i] = attn ? t[i] : 0;
        m->unet_channels[i] = c[i];
    }
    p += 2 * unet_resnet(c[n - 1], c[n - 1], ted) + unet_transformer(c[n - 1], t[n - 1], cross);
    uint64_t prev = c[n - 1];
    for (size_t i = 0; i < n; i++) {
        size_t k = n - 1 - i;
        const char *type = json_string_value(json_array_get(up, i));
        int attn = type && !strncmp(type, "CrossAttn", 9);
        uint64_t o = c[k], in_c = c[k ? k - 1 : 0];
        for (uint64_t j = 0; j <= lpb; j++)
            p += unet_resnet((j ? o : prev) + (j == lpb ? in_c : o), o, ted) +
                 (attn ? unet_transformer(o, t[k], cross) : 0);
        if (i + 1 < n)
            p += o * o * 9 + o;
        prev = o;
    }
    p += 2 * c0 + c0 * out_ch * 9 + out_ch;
    uint64_t side = get_uint(r, "sample_size", 64);
    m->unet = 1;
    m->unet_levels = n;
    m->unet_resnets = lpb;
    m->latent_side = side;
    m->cross_dim = cross;
    m->text_tokens = 77;
    m->extra_params = p;
    /* nominal sizes for the shared checks: one "layer" of the widest level */
    m->hidden = c[n - 1];
    m->layers = 1;
    m->heads = m->kv_heads = 1;
    m->head_dim = m->hidden;
    m->intermediate = 4 * m->hidden;
    m->vision = m->encoder = 1;
    m->image_tokens = side * side;
}

/* diffusers' DiTTransformer2DModel: a patch embedding (Conv2d with bias; fixed sinusoidal
 * positions, a buffer), num_layers BasicTransformerBlocks with adaLN-Zero -- each block's
 * AdaLayerNormZero carries its own timestep (256 -> d -> d) and class embedders and a
 * d -> 6d modulation --, self-attention with biases, a GeLU-tanh 4d MLP, LayerNorms without
 * weights, then proj_out_1 (d -> 2d) and proj_out_2 (d -> p^2 x out_channels). */
static void hook_dit(reader *r, od_model *m)
{
    uint64_t heads = get_uint(r, "num_attention_heads", 16), hd = get_uint(r, "attention_head_dim", 72);
    uint64_t d = heads * hd, p = get_uint(r, "patch_size", 2), side = get_uint(r, "sample_size", 32);
    uint64_t in_ch = get_uint(r, "in_channels", 4), out_ch = get_uint(r, "out_channels", in_ch);
    uint64_t classes = get_uint(r, "num_embeds_ada_norm", 1000);
    m->hidden = d;
    m->heads = m->kv_heads = heads;
    m->head_dim = hd;
    m->layers = get_uint(r, "num_layers", 28);
    m->intermediate = 4 * d;
    m->vision = 1;
    if (r->st == OD_OK && (!p || side % p))
        fail(r, OD_ERR_FORMAT, "field \"%s\" must tile sample_size", "patch_size");
    m->image_tokens = p ? (side / p) * (side / p) : 0;
    uint64_t ada = (256 * d + d + d * d + d) + (classes + 1) * d + (6 * d * d + 6 * d);
    m->extra_params = (in_ch * p * p * d + d) + m->layers * ada + (2 * d * d + 2 * d) + (d * p * p * out_ch + p * p * out_ch);
}

/* ---- the table --------------------------------------------------------------------- */

/* Layout bits of a families.def row. */
enum {
    L_GATED = 1 << 0, L_PLAIN_MLP = 1 << 1, L_FUSED_QKV = 1 << 2, L_FUSED_GATE_UP = 1 << 3,
    L_QKV_BIAS = 1 << 4, L_OUT_BIAS = 1 << 5, L_MLP_BIAS = 1 << 6, L_NORM_BIAS = 1 << 7,
    L_HEAD_BIAS = 1 << 8, L_PARALLEL = 1 << 9, L_EMBED_NORM = 1 << 10, L_ALIBI = 1 << 11,
    L_QK_NORM = 1 << 12, L_QK_NORM_FULL = 1 << 13, L_SANDWICH = 1 << 14, L_ENCODER = 1 << 15,
    L_POOLER = 1 << 16, L_ENCDEC = 1 << 17, L_EAGER_ONLY = 1 << 18, L_NORM_NO_PARAMS = 1 << 19,
    L_INTER_4H = 1 << 20,
    L_BIASES = L_QKV_BIAS | L_OUT_BIAS | L_MLP_BIAS | L_NORM_BIAS
};

typedef struct {
    const char *hidden, *layers, *heads, *kv_heads, *intermediate, *vocab;
    int llama;
} keyset;

#define OD_KEYS(id, h, l, a, g, i, v) static const keyset KEYS_##id = {h, l, a, g, i, v, 0};
#include "read/families.def"
#undef OD_KEYS

typedef struct {
    const char *model_type;
    const keyset *keys;
    od_norm_kind norm;
    unsigned layout;
    const char *act_key, *act;
    int tied;
    const char *drop_key[3];
    double drop[3];
    void (*hook)(reader *, od_model *);
} family;

#define OD_FAMILY(mt, keys, norm, layout, ak, act, tied, adk, ad, rdk, rd, edk, ed, hook) \
    {mt, &KEYS_##keys, OD_NORM_##norm, layout, ak, act, tied, {adk, rdk, edk}, {ad, rd, ed}, hook},
static const family FAMILIES[] = {
#include "read/families.def"
};
#undef OD_FAMILY

/* Any other model_type with the generic fields: a Llama-style block. */
static const family GENERIC = {"", &KEYS_LLAMA, OD_NORM_RMS, 0, NULL, NULL, 0,
                               {"attention_dropout", NULL, NULL}, {0, 0, 0}, NULL};

/* The sizes under the keyset's names (llama: read_llama_like). */
static void read_sizes(reader *r, const keyset *k, unsigned layout, od_model *m)
{
    if (k == &KEYS_LLAMA) {
        read_llama_like(r, m);
        return;
    }
    if (k->hidden)
        m->hidden = get_uint(r, k->hidden, -1);
    if (k->layers)
        m->layers = get_uint(r, k->layers, -1);
    if (k->heads)
        m->heads = m->kv_heads = get_uint(r, k->heads, -1);
    if (k->kv_heads)
        m->kv_heads = get_uint(r, k->kv_heads, (long long)m->heads);
    if (k->vocab)
        m->vocab = get_uint(r, k->vocab, -1);
    if (k->intermediate)
        m->intermediate = get_uint(r, k->intermediate, layout & L_INTER_4H ? 0 : -1);
    if (!m->intermediate && (layout & L_INTER_4H))
        m->intermediate = 4 * m->hidden;
}

/* One row: sizes, layout, activation, ties, dropouts, then the hook. */
static void read_row(reader *r, const family *f, od_model *m)
{
    unsigned b = f->layout;
    read_sizes(r, f->keys, b, m);
    m->norm = f->norm;
    if (b & L_GATED)
        m->gated_mlp = 1;
    if (b & L_PLAIN_MLP)
        m->gated_mlp = 0;
    m->fused_qkv |= !!(b & L_FUSED_QKV);
    m->fused_gate_up |= !!(b & L_FUSED_GATE_UP);
    m->qkv_bias |= !!(b & L_QKV_BIAS);
    m->out_bias |= !!(b & L_OUT_BIAS);
    m->mlp_bias |= !!(b & L_MLP_BIAS);
    m->norm_bias |= !!(b & L_NORM_BIAS);
    m->head_bias |= !!(b & L_HEAD_BIAS);
    if (b & L_PARALLEL)
        m->parallel_block = 1;
    m->embed_norm |= !!(b & L_EMBED_NORM);
    m->alibi |= !!(b & L_ALIBI);
    if (b & L_QK_NORM)
        m->qk_norm = 1;
    if (b & L_QK_NORM_FULL)
        m->qk_norm = 2;
    m->sandwich_norm |= !!(b & L_SANDWICH);
    m->encoder |= !!(b & L_ENCODER);
    m->pooler |= !!(b & L_POOLER);
    m->encdec |= !!(b & L_ENCDEC);
    m->eager_only |= !!(b & L_EAGER_ONLY);
    m->norm_no_params |= !!(b & L_NORM_NO_PARAMS);
    if (f->act_key)
        m->act = act_kind(get_str(r, f->act_key, f->act));
    else if (f->act)
        m->act = act_kind(f->act);
    m->tied_embeddings = get_bool(r, "tie_word_embeddings", f->tied);
    double *drop[3] = {&m->attn_dropout, &m->resid_dropout, &m->embd_dropout};
    for (int i = 0; i < 3; i++)
        if (f->drop_key[i])
            *drop[i] = get_real(r, f->drop_key[i], f->drop[i]);
    if (f->hook)
        f->hook(r, m);
    if (!m->head_dim && m->heads)
        m->head_dim = m->hidden / m->heads;
}

/* The family of model_type mt, or NULL. */
static const family *family_of(const char *mt)
{
    for (size_t i = 0; i < sizeof FAMILIES / sizeof FAMILIES[0]; i++)
        if (!strcmp(FAMILIES[i].model_type, mt))
            return &FAMILIES[i];
    return NULL;
}

/* The text tower of CLIP / SigLIP (text_config, the transformers defaults where it is
 * silent): its token and position tables, pre-norm layers, final LayerNorm, SigLIP's head;
 * CLIP's two projections and logit_scale, SigLIP's logit_scale and logit_bias. Its
 * parameters join extra_params; its size stays for its activations. */
static void text_tower(reader *r, json_t *root, int siglip, od_model *m)
{
    json_t *prev = r->root, *tc = json_object_get(root, "text_config");
    r->root = json_is_object(tc) ? tc : json_object();
    uint64_t V = get_uint(r, "vocab_size", siglip ? 32000 : 49408), h = get_uint(r, "hidden_size", siglip ? 768 : 512);
    uint64_t I = get_uint(r, "intermediate_size", siglip ? 3072 : 2048), L = get_uint(r, "num_hidden_layers", 12);
    uint64_t P = get_uint(r, "max_position_embeddings", siglip ? 64 : 77);
    uint64_t head = siglip ? get_uint(r, "projection_size", (long long)h) : 0;
    if (!json_is_object(tc))
        json_decref(r->root);
    r->root = root;
    uint64_t proj = siglip ? 0 : get_uint(r, "projection_dim", 512);
    r->root = prev;
    uint64_t layer = 4 * (h * h + h) + 2 * 2 * h + (h * I + I) + (I * h + h);
    uint64_t n = V * h + P * h + L * layer + 2 * h + (siglip ? h * head + head + 2 : 0);
    if (!siglip)
        n += m->hidden * proj + h * proj + 1;
    m->extra_params += n;
    m->tower2_layers = L;
    m->tower2_tokens = P;
    m->tower2_hidden = h;
}

od_status od_hfconfig_parse(const char *text, size_t len, od_model *out, od_error *err)
{
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        /* jansson reports the bytes consumed: the last one is where it stopped */
        return od_fail_at(err, OD_ERR_FORMAT, (uint64_t)(jerr.position > 0 ? jerr.position - 1 : 0),
                          "not a JSON config: %s", jerr.text);
    if (!json_is_object(root)) {
        json_decref(root);
        return od_fail_at(err, OD_ERR_FORMAT, 0, "expected a JSON object (a config.json)");
    }
    reader r = {root, err, OD_OK, text, len};
    od_model m;
    memset(&m, 0, sizeof m);
    m.moe_every = 1;
    /* CLIP / SigLIP: the vision tower is the model; the text tower trains beside it */
    const char *top = json_string_value(json_object_get(root, "model_type"));
    json_t *vc = json_object_get(root, "vision_config"), *tc = json_object_get(root, "text_config");
    int two_towers = top && (!strcmp(top, "clip") || !strcmp(top, "siglip")) && json_is_object(vc);
    /* Multimodal wrappers (Gemma 3, Llama 4 ...) keep the language model in text_config. */
    if (two_towers)
        r.root = vc;
    else if (tc && json_is_object(tc) && json_object_get(tc, "model_type"))
        r.root = tc;
    const char *mt = two_towers ? (!strcmp(top, "clip") ? "clip_vision_model" : "siglip_vision_model")
                                : get_str(&r, "model_type", NULL);
    /* diffusers configs name their class instead */
    if (r.st == OD_OK && !mt && json_is_string(json_object_get(root, "_class_name")))
        mt = json_string_value(json_object_get(root, "_class_name"));
    if (r.st == OD_OK && !mt)
        fail(&r, OD_ERR_FORMAT, "missing field \"%s\" (which architecture this is)", "model_type");
    if (r.st == OD_OK && mt) {
        snprintf(m.model_type, sizeof m.model_type, "%s", mt);
        const family *f = family_of(mt);
        if (f) {
            read_row(&r, f, &m);
        } else if (r.st == OD_OK) {
            /* Any other decoder: the generic fields, read as a Llama-style block */
            static const char *const need[] = {"hidden_size", "num_hidden_layers",
                                               "num_attention_heads", "vocab_size",
                                               "intermediate_size"};
            for (size_t i = 0; i < sizeof need / sizeof need[0] && r.st == OD_OK; i++)
                if (!json_object_get(r.root, need[i]))
                    r.st = od_fail(err, OD_ERR_FORMAT,
                                   "unknown model_type \"%s\" and no generic field \"%s\" to "
                                   "read it as a Llama-style block (`oomdoc plan --help` lists "
                                   "the known ones)", m.model_type, need[i]);
            if (r.st == OD_OK) {
                read_row(&r, &GENERIC, &m);
                m.generic = 1;
            }
        }
    }
    if (two_towers && r.st == OD_OK)
        text_tower(&r, root, !strcmp(top, "siglip"), &m);
    static const char *const ctx_keys[] = {"max_position_embeddings", "n_positions",
                                            "max_sequence_length", "seq_length", "n_ctx"};
    for (size_t i = 0; i < sizeof ctx_keys / sizeof ctx_keys[0] && !m.max_positions; i++) {
        json_t *v = json_object_get(r.root, ctx_keys[i]);
        if (json_is_integer(v) && json_integer_value(v) > 0 && json_integer_value(v) <= (1 << 30))
            m.max_positions = (uint64_t)json_integer_value(v);
    }
    /* "4.45.2": the layout transformers gave the modules (MoE experts fused since 5) */
    json_t *tv = json_object_get(root, "transformers_version");
    if (json_is_string(tv)) {
        unsigned long major = strtoul(json_string_value(tv), NULL, 10);
        m.transformers_major = major < 1000 ? (unsigned)major : 0;
    }
    /* GPTQ/AWQ pack quantization_config.bits values an int32; bitsandbytes says
     * load_in_4bit / load_in_8bit. */
    json_t *qc = json_object_get(root, "quantization_config");
    if (r.st == OD_OK && json_is_object(qc)) {
        json_t *bits = json_object_get(qc, "bits");
        if (json_is_integer(bits)) {
            json_int_t b = json_integer_value(bits);
            if (b < 1 || b > 32 || 32 % b)
                fail(&r, OD_ERR_FORMAT, "field \"%s\" must be 1, 2, 4, 8, 16 or 32", "bits");
            else
                m.quant_bits = (unsigned)b;
        } else if (json_is_true(json_object_get(qc, "load_in_4bit"))) {
            m.quant_bits = 4;
        } else if (json_is_true(json_object_get(qc, "load_in_8bit"))) {
            m.quant_bits = 8;
        }
    }
    json_decref(root);
    if (r.st != OD_OK)
        return r.st;
    if (m.heads && m.hidden % m.heads && m.head_dim == 0)
        return od_fail(err, OD_ERR_FORMAT, "hidden_size must be a multiple of num_attention_heads");
    od_status st = od_model_validate(&m, err);
    if (st != OD_OK)
        return st;
    *out = m;
    return OD_OK;
}
