/* hfconfig.c - config.json -> od_model, family by family. */
#include "read/hfconfig.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
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
    m->attn_dropout = get_real(r, "attention_dropout", 0.0);
    m->tied_embeddings = get_bool(r, "tie_word_embeddings", 0);
    /* Qwen2 carries a window it does not use unless use_sliding_window is set */
    if (get_bool(r, "use_sliding_window", 1))
        m->sliding_window = get_uint(r, "sliding_window", 0);
    m->sliding_layers = m->layers;
    long long lt = sliding_in_layer_types(r);
    if (lt >= 0 && m->sliding_window)
        m->sliding_layers = (uint64_t)lt;
}

static int read_family(reader *r, const char *mt, od_model *m)
{
    if (!strcmp(mt, "gpt2")) {
        m->hidden = get_uint(r, "n_embd", -1);
        m->layers = get_uint(r, "n_layer", -1);
        m->heads = m->kv_heads = get_uint(r, "n_head", -1);
        m->vocab = get_uint(r, "vocab_size", -1);
        m->positions = get_uint(r, "n_positions", 1024);
        m->intermediate = get_uint(r, "n_inner", 0);
        if (!m->intermediate)
            m->intermediate = 4 * m->hidden;
        m->head_dim = m->heads ? m->hidden / m->heads : 0;
        m->fused_qkv = 1;
        m->qkv_bias = m->out_bias = m->mlp_bias = m->norm_bias = 1;
        m->norm = OD_NORM_LAYER;
        m->act = act_kind(get_str(r, "activation_function", "gelu_new"));
        m->attn_dropout = get_real(r, "attn_pdrop", 0.1);
        m->resid_dropout = get_real(r, "resid_pdrop", 0.1);
        m->embd_dropout = get_real(r, "embd_pdrop", 0.1);
        m->tied_embeddings = get_bool(r, "tie_word_embeddings", 1);
        return 1;
    }
    if (!strcmp(mt, "llama") || !strcmp(mt, "mistral") || !strcmp(mt, "qwen2") ||
        !strcmp(mt, "qwen3")) {
        read_llama_like(r, m);
        if (!strcmp(mt, "qwen2"))
            m->qkv_bias = 1, m->out_bias = 0;
        if (!strcmp(mt, "qwen3"))
            m->qk_norm = 1;
        return 1;
    }
    if (!strcmp(mt, "gemma") || !strcmp(mt, "gemma2") || !strcmp(mt, "gemma3_text")) {
        read_llama_like(r, m);
        m->norm = OD_NORM_RMS_GEMMA;
        m->tied_embeddings = get_bool(r, "tie_word_embeddings", 1);
        if (strcmp(mt, "gemma")) {
            m->sandwich_norm = 1;
            json_t *cap = json_object_get(r->root, "final_logit_softcapping");
            m->logit_softcap = cap && json_is_number(cap);
            /* local layers alternate with global ones: Gemma 2 every other layer (the
             * even ones), Gemma 3 all but every sliding_window_pattern-th */
            if (sliding_in_layer_types(r) < 0 && m->sliding_window) {
                if (!strcmp(mt, "gemma2")) {
                    m->sliding_layers = (m->layers + 1) / 2;
                } else {
                    uint64_t pat = get_uint(r, "sliding_window_pattern", 6);
                    m->sliding_layers = m->layers - (pat ? m->layers / pat : 0);
                }
            }
        }
        if (!strcmp(mt, "gemma3_text"))
            m->qk_norm = 1;
        return 1;
    }
    if (!strcmp(mt, "phi3")) {
        read_llama_like(r, m);
        m->fused_qkv = m->fused_gate_up = 1;
        m->resid_dropout = get_real(r, "resid_pdrop", 0.0);
        m->embd_dropout = get_real(r, "embd_pdrop", 0.0);
        return 1;
    }
    if (!strcmp(mt, "mixtral") || !strcmp(mt, "qwen2_moe") || !strcmp(mt, "qwen3_moe")) {
        read_llama_like(r, m);
        if (!strcmp(mt, "mixtral")) {
            m->experts = get_uint(r, "num_local_experts", -1);
            m->experts_per_token = get_uint(r, "num_experts_per_tok", 2);
            m->expert_intermediate = m->intermediate;
        } else {
            m->experts = get_uint(r, "num_experts", -1);
            m->experts_per_token = get_uint(r, "num_experts_per_tok", -1);
            m->expert_intermediate = get_uint(r, "moe_intermediate_size", -1);
            m->moe_every = get_uint(r, "decoder_sparse_step", 1);
            if (!strcmp(mt, "qwen2_moe")) {
                m->qkv_bias = 1, m->out_bias = 0;
                m->shared_intermediate = get_uint(r, "shared_expert_intermediate_size", 0);
                m->shared_gate = m->shared_intermediate > 0;
            } else {
                m->qk_norm = 1;
            }
        }
        if (!m->moe_every)
            m->moe_every = 1;
        return 1;
    }
    if (!strcmp(mt, "falcon")) {
        m->hidden = get_uint(r, "hidden_size", -1);
        m->layers = get_uint(r, "num_hidden_layers", -1);
        m->heads = get_uint(r, "num_attention_heads", -1);
        m->vocab = get_uint(r, "vocab_size", -1);
        int newarch = get_bool(r, "new_decoder_architecture", 0);
        int mq = get_bool(r, "multi_query", 1);
        m->kv_heads = newarch ? get_uint(r, "num_kv_heads", (long long)m->heads) : (mq ? 1 : m->heads);
        m->head_dim = m->heads ? m->hidden / m->heads : 0;
        m->intermediate = get_uint(r, "ffn_hidden_size", 0);
        if (!m->intermediate)
            m->intermediate = 4 * m->hidden;
        m->fused_qkv = 1;
        m->qkv_bias = m->out_bias = m->mlp_bias = get_bool(r, "bias", 0);
        m->norm = OD_NORM_LAYER;
        m->norm_bias = 1;
        m->act = OD_ACT_FUSED;
        m->parallel_block = newarch ? 2 : get_bool(r, "parallel_attn", 1);
        m->attn_dropout = get_real(r, "attention_dropout", 0.0);
        m->resid_dropout = get_real(r, "hidden_dropout", 0.0);
        m->tied_embeddings = get_bool(r, "tie_word_embeddings", 1);
        return 1;
    }
    if (!strcmp(mt, "opt")) {
        m->hidden = get_uint(r, "hidden_size", -1);
        m->layers = get_uint(r, "num_hidden_layers", -1);
        m->heads = m->kv_heads = get_uint(r, "num_attention_heads", -1);
        m->vocab = get_uint(r, "vocab_size", -1);
        m->intermediate = get_uint(r, "ffn_dim", -1);
        m->head_dim = m->heads ? m->hidden / m->heads : 0;
        /* a learned table with OPT's offset of 2 rows */
        m->positions = get_uint(r, "max_position_embeddings", 2048) + 2;
        m->qkv_bias = m->out_bias = m->mlp_bias = get_bool(r, "enable_bias", 1);
        m->norm = OD_NORM_LAYER;
        m->norm_bias = get_bool(r, "layer_norm_elementwise_affine", 1);
        m->norm_no_params = !m->norm_bias;
        m->act = act_kind(get_str(r, "activation_function", "relu"));
        m->attn_dropout = get_real(r, "attention_dropout", 0.0);
        m->resid_dropout = get_real(r, "dropout", 0.1);
        m->tied_embeddings = get_bool(r, "tie_word_embeddings", 1);
        if (get_uint(r, "word_embed_proj_dim", (long long)m->hidden) != m->hidden)
            fail(r, OD_ERR_FORMAT, "field \"%s\" different from hidden_size (OPT-350m's "
                 "projections) is not modelled", "word_embed_proj_dim");
        return 1;
    }
    if (!strcmp(mt, "bloom")) {
        /* older BLOOM configs spell them n_embed and num_attention_heads */
        m->hidden = get_uint(r, json_object_get(r->root, "hidden_size") ? "hidden_size" : "n_embed", -1);
        m->layers = get_uint(r, "n_layer", -1);
        m->heads = m->kv_heads =
            get_uint(r, json_object_get(r->root, "n_head") ? "n_head" : "num_attention_heads", -1);
        m->vocab = get_uint(r, "vocab_size", -1);
        m->intermediate = 4 * m->hidden;
        m->head_dim = m->heads ? m->hidden / m->heads : 0;
        m->fused_qkv = m->qkv_bias = m->out_bias = m->mlp_bias = m->norm_bias = 1;
        m->norm = OD_NORM_LAYER;
        m->embed_norm = m->alibi = 1;
        m->act = OD_ACT_GELU_NEW;   /* bloom_gelu_forward: the tanh formula in Python ops */
        m->attn_dropout = get_real(r, "attention_dropout", 0.0);
        m->resid_dropout = get_real(r, "hidden_dropout", 0.0);
        m->tied_embeddings = get_bool(r, "tie_word_embeddings", 1);
        return 1;
    }
    if (!strcmp(mt, "gptj")) {
        m->hidden = get_uint(r, "n_embd", -1);
        m->layers = get_uint(r, "n_layer", -1);
        m->heads = m->kv_heads = get_uint(r, "n_head", -1);
        m->vocab = get_uint(r, "vocab_size", -1);
        m->intermediate = get_uint(r, "n_inner", 0);
        if (!m->intermediate)
            m->intermediate = 4 * m->hidden;
        m->head_dim = m->heads ? m->hidden / m->heads : 0;
        m->mlp_bias = m->norm_bias = m->head_bias = 1;
        m->norm = OD_NORM_LAYER;
        m->parallel_block = 1;
        m->act = act_kind(get_str(r, "activation_function", "gelu_new"));
        m->attn_dropout = get_real(r, "attn_pdrop", 0.0);
        m->resid_dropout = get_real(r, "resid_pdrop", 0.0);
        m->embd_dropout = get_real(r, "embd_pdrop", 0.0);
        m->tied_embeddings = get_bool(r, "tie_word_embeddings", 0);
        return 1;
    }
    if (!strcmp(mt, "mpt")) {
        m->hidden = get_uint(r, "d_model", -1);
        m->layers = get_uint(r, "n_layers", -1);
        m->heads = m->kv_heads = get_uint(r, "n_heads", -1);
        m->vocab = get_uint(r, "vocab_size", -1);
        m->intermediate = get_uint(r, "expansion_ratio", 4) * m->hidden;
        m->head_dim = m->heads ? m->hidden / m->heads : 0;
        m->fused_qkv = 1;
        m->norm = OD_NORM_LAYER;    /* transformers drops the LayerNorm biases */
        m->act = OD_ACT_FUSED;
        m->resid_dropout = get_real(r, "resid_pdrop", 0.0);
        m->embd_dropout = get_real(r, "emb_pdrop", 0.0);
        json_t *prev = enter(r, "attn_config");
        m->alibi = get_bool(r, "alibi", 1);
        m->attn_dropout = get_real(r, "attn_pdrop", 0.0);
        r->root = prev;
        if (!m->alibi)
            m->positions = get_uint(r, "max_seq_len", 2048);
        m->tied_embeddings = 1;
        return 1;
    }
    if (!strcmp(mt, "phi")) {
        read_llama_like(r, m);
        m->gated_mlp = 0;
        m->qkv_bias = m->out_bias = m->mlp_bias = m->norm_bias = m->head_bias = 1;
        m->norm = OD_NORM_LAYER;
        m->parallel_block = 1;
        m->act = act_kind(get_str(r, "hidden_act", "gelu_new"));
        m->resid_dropout = get_real(r, "resid_pdrop", 0.0);
        m->embd_dropout = get_real(r, "embd_pdrop", 0.0);
        if (get_bool(r, "qk_layernorm", 0))
            fail(r, OD_ERR_FORMAT, "field \"%s\" true is not modelled", "qk_layernorm");
        return 1;
    }
    if (!strcmp(mt, "starcoder2")) {
        read_llama_like(r, m);
        m->gated_mlp = 0;
        m->qkv_bias = m->out_bias = m->mlp_bias = get_bool(r, "use_bias", 1);
        m->norm = OD_NORM_LAYER;
        m->norm_bias = 1;
        m->act = act_kind(get_str(r, "hidden_act", "gelu_pytorch_tanh"));
        m->resid_dropout = get_real(r, "residual_dropout", 0.0);
        m->embd_dropout = get_real(r, "embedding_dropout", 0.0);
        m->tied_embeddings = get_bool(r, "tie_word_embeddings", 1);
        return 1;
    }
    if (!strcmp(mt, "olmo") || !strcmp(mt, "olmo2")) {
        read_llama_like(r, m);
        if (!strcmp(mt, "olmo")) {
            m->norm = OD_NORM_LAYER;    /* F.layer_norm without weight or bias */
            m->norm_no_params = 1;
        } else {
            m->qk_norm = 2;             /* RMSNorm over all of q and all of k */
        }
        return 1;
    }
    if (!strcmp(mt, "cohere")) {
        read_llama_like(r, m);
        m->norm = OD_NORM_LAYER;        /* CohereLayerNorm: a weight, no bias */
        m->parallel_block = 1;
        m->tied_embeddings = get_bool(r, "tie_word_embeddings", 1);
        if (get_bool(r, "use_qk_norm", 0))
            m->qk_norm = 2;             /* per-head weights: heads x head_dim each */
        return 1;
    }
    if (!strcmp(mt, "deepseek_v2") || !strcmp(mt, "deepseek_v3")) {
        read_llama_like(r, m);
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
            m->router_bias = !strcmp(mt, "deepseek_v3");
        }
        if (!m->moe_every)
            m->moe_every = 1;
        return 1;
    }
    if (!strcmp(mt, "dbrx")) {
        m->hidden = get_uint(r, "d_model", -1);
        m->layers = get_uint(r, "n_layers", -1);
        m->heads = get_uint(r, "n_heads", -1);
        m->vocab = get_uint(r, "vocab_size", -1);
        m->head_dim = m->heads ? m->hidden / m->heads : 0;
        m->fused_qkv = 1;
        m->norm = OD_NORM_LAYER;        /* LayerNorm(bias=False) */
        m->act = OD_ACT_FUSED;
        m->gated_mlp = 1;
        m->resid_dropout = get_real(r, "resid_pdrop", 0.0);
        m->embd_dropout = get_real(r, "emb_pdrop", 0.0);
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
        m->tied_embeddings = get_bool(r, "tie_word_embeddings", 0);
        return 1;
    }
    if (!strcmp(mt, "t5")) {
        /* T5ForConditionalGeneration: a shared embedding, an encoder and a decoder of
         * self-attention (+ cross-attention) and a ReLU or gated-GELU MLP, RMS norms
         * with weights only, relative position biases in each stack's first layer */
        m->hidden = get_uint(r, "d_model", -1);
        uint64_t enc = get_uint(r, "num_layers", -1);
        uint64_t dec = get_uint(r, "num_decoder_layers", (long long)enc);
        m->layers = enc + dec;
        m->heads = m->kv_heads = get_uint(r, "num_heads", -1);
        m->head_dim = get_uint(r, "d_kv", -1);
        m->intermediate = get_uint(r, "d_ff", -1);
        m->vocab = get_uint(r, "vocab_size", -1);
        m->gated_mlp = !strncmp(get_str(r, "feed_forward_proj", "relu"), "gated-", 6);
        m->norm = OD_NORM_RMS;
        m->act = OD_ACT_FUSED;
        m->resid_dropout = get_real(r, "dropout_rate", 0.1);
        m->tied_embeddings = get_bool(r, "tie_word_embeddings", 1);
        m->encdec = 1;
        uint64_t inner = m->heads * m->head_dim, buckets = get_uint(r, "relative_attention_num_buckets", 32);
        m->extra_params = dec * (4 * m->hidden * inner + m->hidden) + 2 * buckets * m->heads + m->hidden;
        return 1;
    }
    if (!strcmp(mt, "bert") || !strcmp(mt, "roberta")) {
        m->hidden = get_uint(r, "hidden_size", -1);
        m->layers = get_uint(r, "num_hidden_layers", -1);
        m->heads = m->kv_heads = get_uint(r, "num_attention_heads", -1);
        m->vocab = get_uint(r, "vocab_size", -1);
        m->intermediate = get_uint(r, "intermediate_size", -1);
        m->head_dim = m->heads ? m->hidden / m->heads : 0;
        m->positions = get_uint(r, "max_position_embeddings", 512);
        m->type_vocab = get_uint(r, "type_vocab_size", 2);
        m->qkv_bias = m->out_bias = m->mlp_bias = m->norm_bias = 1;
        m->norm = OD_NORM_LAYER;
        m->embed_norm = m->encoder = m->pooler = 1;
        m->act = act_kind(get_str(r, "hidden_act", "gelu"));
        m->attn_dropout = get_real(r, "attention_probs_dropout_prob", 0.1);
        m->resid_dropout = get_real(r, "hidden_dropout_prob", 0.1);
        m->embd_dropout = m->resid_dropout;
        return 1;
    }
    if (!strcmp(mt, "mamba")) {
        /* MambaForCausalLM: embeddings, blocks of RMSNorm + MambaMixer (no attention, no
         * MLP), norm_f, a tied lm_head (modeling_mamba.py) */
        m->hidden = get_uint(r, "hidden_size", -1);
        m->layers = get_uint(r, "num_hidden_layers", -1);
        m->vocab = get_uint(r, "vocab_size", -1);
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
        m->norm = OD_NORM_RMS;
        m->act = OD_ACT_FUSED;
        m->tied_embeddings = get_bool(r, "tie_word_embeddings", 1);
        return 1;
    }
    if (!strcmp(mt, "jamba")) {
        /* JambaForCausalLM: attention in the layers i % attn_layer_period ==
         * attn_layer_offset, Mamba mixers (with dt/B/C RMSNorms) in the rest; a sparse MoE
         * in the layers i % expert_layer_period == expert_layer_offset, a gated MLP
         * elsewhere (modeling_jamba.py) */
        read_llama_like(r, m);
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
        return 1;
    }
    if (!strcmp(mt, "deberta-v2")) {
        /* DebertaV2Model: BERT-like encoder with disentangled attention: relative position
         * embeddings (2 x position_buckets rows, or 2 x max_relative_positions), projected
         * by the layer's own key/query projections when share_att_key, else by per-layer
         * pos_key_proj / pos_query_proj; no absolute positions unless position_biased_input;
         * no pooler (modeling_deberta_v2.py) */
        m->hidden = get_uint(r, "hidden_size", -1);
        m->layers = get_uint(r, "num_hidden_layers", -1);
        m->heads = m->kv_heads = get_uint(r, "num_attention_heads", -1);
        m->vocab = get_uint(r, "vocab_size", -1);
        m->intermediate = get_uint(r, "intermediate_size", -1);
        m->head_dim = m->heads ? m->hidden / m->heads : 0;
        uint64_t maxpos = get_uint(r, "max_position_embeddings", 512);
        m->positions = get_bool(r, "position_biased_input", 1) ? maxpos : 0;
        m->type_vocab = get_uint(r, "type_vocab_size", 0);
        m->qkv_bias = m->out_bias = m->mlp_bias = m->norm_bias = 1;
        m->norm = OD_NORM_LAYER;
        m->embed_norm = m->encoder = 1;
        m->eager_only = 1;
        m->act = act_kind(get_str(r, "hidden_act", "gelu"));
        m->attn_dropout = get_real(r, "attention_probs_dropout_prob", 0.1);
        m->resid_dropout = get_real(r, "hidden_dropout_prob", 0.1);
        m->embd_dropout = m->resid_dropout;
        if (get_uint(r, "conv_kernel_size", 0))
            fail(r, OD_ERR_FORMAT, "field \"%s\" (DeBERTa-v2's ConvLayer) is not modelled",
                 "conv_kernel_size");
        if (json_object_get(r->root, "embedding_size") &&
            get_uint(r, "embedding_size", 0) != m->hidden)
            fail(r, OD_ERR_FORMAT, "field \"%s\" other than hidden_size (an embedding "
                 "projection) is not modelled", "embedding_size");
        if (get_bool(r, "relative_attention", 0)) {
            json_t *mr = json_object_get(r->root, "max_relative_positions");
            uint64_t rel = json_is_integer(mr) && json_integer_value(mr) > 0
                               ? (uint64_t)json_integer_value(mr) : maxpos;
            json_t *pb = json_object_get(r->root, "position_buckets");
            if (json_is_integer(pb) && json_integer_value(pb) > 0)
                rel = (uint64_t)json_integer_value(pb);
            m->extra_params = 2 * rel * m->hidden;
            if (strstr(get_str(r, "norm_rel_ebd", "none"), "layer_norm"))
                m->extra_params += 2 * m->hidden;
            if (!get_bool(r, "share_att_key", 0)) {
                /* a list, or a "p2c|c2p" string as the published configs write it */
                json_t *pt = json_object_get(r->root, "pos_att_type");
                const char *kinds[] = {"c2p", "p2c"};
                for (size_t k = 0; k < 2; k++) {
                    int has = json_is_string(pt) && strstr(json_string_value(pt), kinds[k]);
                    for (size_t i = 0; json_is_array(pt) && i < json_array_size(pt); i++) {
                        const char *t = json_string_value(json_array_get(pt, i));
                        has |= t && !strcmp(t, kinds[k]);
                    }
                    if (has) /* pos_key_proj (c2p), pos_query_proj (p2c) in each layer */
                        m->extra_params += m->layers * (m->hidden * m->hidden + m->hidden);
                }
            }
        }
        return 1;
    }
    if (!strcmp(mt, "bart")) {
        /* BartForConditionalGeneration: a shared embedding, learned positions (+2 offset
         * rows) and an embedding LayerNorm in each stack, post-norm encoder and decoder
         * layers (the decoder's with cross-attention), biases everywhere, the lm_head tied
         * to the shared embedding (modeling_bart.py) */
        m->hidden = get_uint(r, "d_model", -1);
        uint64_t enc = get_uint(r, "encoder_layers", -1), dec = get_uint(r, "decoder_layers", -1);
        m->layers = enc + dec;
        m->heads = m->kv_heads = get_uint(r, "encoder_attention_heads", -1);
        m->intermediate = get_uint(r, "encoder_ffn_dim", -1);
        if (get_uint(r, "decoder_attention_heads", (long long)m->heads) != m->heads ||
            get_uint(r, "decoder_ffn_dim", (long long)m->intermediate) != m->intermediate)
            fail(r, OD_ERR_FORMAT, "field \"%s\" differing from the encoder's is not modelled",
                 "decoder_ffn_dim");
        m->head_dim = m->heads ? m->hidden / m->heads : 0;
        m->vocab = get_uint(r, "vocab_size", -1);
        uint64_t pos = get_uint(r, "max_position_embeddings", 1024) + 2;
        m->qkv_bias = m->out_bias = m->mlp_bias = m->norm_bias = 1;
        m->norm = OD_NORM_LAYER;
        m->act = act_kind(get_str(r, "activation_function", "gelu"));
        m->resid_dropout = get_real(r, "dropout", 0.1);
        m->attn_dropout = get_real(r, "attention_dropout", 0.0);
        m->tied_embeddings = get_bool(r, "tie_word_embeddings", 1);
        m->encdec = 1;
        uint64_t h = m->hidden;
        /* cross-attention + its LayerNorm per decoder layer, both position tables, the
         * second embedding LayerNorm (the first stands where a final norm would) */
        m->extra_params = dec * (4 * h * h + 4 * h + 2 * h) + 2 * pos * h + 2 * h;
        if (get_bool(r, "add_final_layer_norm", 0)) /* a LayerNorm after each stack */
            m->extra_params += 2 * 2 * h;
        return 1;
    }
    if (!strcmp(mt, "gpt_neox")) {
        m->hidden = get_uint(r, "hidden_size", -1);
        m->layers = get_uint(r, "num_hidden_layers", -1);
        m->heads = m->kv_heads = get_uint(r, "num_attention_heads", -1);
        m->vocab = get_uint(r, "vocab_size", -1);
        m->intermediate = get_uint(r, "intermediate_size", -1);
        m->head_dim = m->heads ? m->hidden / m->heads : 0;
        m->fused_qkv = 1;
        m->qkv_bias = m->out_bias = m->mlp_bias = get_bool(r, "attention_bias", 1);
        m->norm = OD_NORM_LAYER;
        m->norm_bias = 1;
        m->act = act_kind(get_str(r, "hidden_act", "gelu"));
        m->parallel_block = get_bool(r, "use_parallel_residual", 1) ? 2 : 0;
        m->attn_dropout = get_real(r, "attention_dropout", 0.0);
        m->resid_dropout = get_real(r, "hidden_dropout", 0.0);
        m->tied_embeddings = get_bool(r, "tie_word_embeddings", 0);
        return 1;
    }
    return 0;
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
    /* Multimodal wrappers (Gemma 3, Llama 4 ...) keep the language model in text_config. */
    json_t *tc = json_object_get(root, "text_config");
    if (tc && json_is_object(tc) && json_object_get(tc, "model_type"))
        r.root = tc;
    const char *mt = get_str(&r, "model_type", NULL);
    if (r.st == OD_OK && !mt)
        fail(&r, OD_ERR_FORMAT, "missing field \"%s\" (which architecture this is)", "model_type");
    if (r.st == OD_OK && mt) {
        snprintf(m.model_type, sizeof m.model_type, "%s", mt);
        if (!read_family(&r, mt, &m) && r.st == OD_OK) {
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
                read_llama_like(&r, &m);
                m.generic = 1;
            }
        }
    }
    static const char *const ctx_keys[] = {"max_position_embeddings", "n_positions",
                                            "max_sequence_length", "seq_length", "n_ctx"};
    for (size_t i = 0; i < sizeof ctx_keys / sizeof ctx_keys[0] && !m.max_positions; i++) {
        json_t *v = json_object_get(r.root, ctx_keys[i]);
        if (json_is_integer(v) && json_integer_value(v) > 0 && json_integer_value(v) <= (1 << 30))
            m.max_positions = (uint64_t)json_integer_value(v);
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
