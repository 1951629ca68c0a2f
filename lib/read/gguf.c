/* gguf.c - GGUF headers: metadata and tensor infos, bounds-checked byte by byte. */
#include "read/gguf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ggml's types: values per block and bytes per block (ggml/src/ggml.c type_traits; the
 * block layouts in ggml-common.h). NULL names are removed or unused codes. */
static const struct { const char *name; uint32_t block, bytes; } TYPES[] = {
    [0] = {"F32", 1, 4},       [1] = {"F16", 1, 2},       [2] = {"Q4_0", 32, 18},
    [3] = {"Q4_1", 32, 20},    [6] = {"Q5_0", 32, 22},    [7] = {"Q5_1", 32, 24},
    [8] = {"Q8_0", 32, 34},    [9] = {"Q8_1", 32, 36},    [10] = {"Q2_K", 256, 84},
    [11] = {"Q3_K", 256, 110}, [12] = {"Q4_K", 256, 144}, [13] = {"Q5_K", 256, 176},
    [14] = {"Q6_K", 256, 210}, [15] = {"Q8_K", 256, 292}, [16] = {"IQ2_XXS", 256, 66},
    [17] = {"IQ2_XS", 256, 74}, [18] = {"IQ3_XXS", 256, 98}, [19] = {"IQ1_S", 256, 50},
    [20] = {"IQ4_NL", 32, 18}, [21] = {"IQ3_S", 256, 110}, [22] = {"IQ2_S", 256, 82},
    [23] = {"IQ4_XS", 256, 136}, [24] = {"I8", 1, 1},     [25] = {"I16", 1, 2},
    [26] = {"I32", 1, 4},      [27] = {"I64", 1, 8},      [28] = {"F64", 1, 8},
    [29] = {"IQ1_M", 256, 56}, [30] = {"BF16", 1, 2},     [34] = {"TQ1_0", 256, 54},
    [35] = {"TQ2_0", 256, 66}, [39] = {"MXFP4", 32, 17},
};
#define N_TYPES (sizeof TYPES / sizeof TYPES[0])

const char *od_gguf_type_name(uint32_t t)
{
    return t < N_TYPES ? TYPES[t].name : NULL;
}

/* A cursor over the header; a read past len sets need (the header continues beyond the
 * bytes given), past the file's end fails. */
typedef struct {
    const uint8_t *b;
    size_t len;
    uint64_t file_size, at, need;
    od_error *err;
    od_status st;
} cur;

static int room(cur *c, uint64_t n)
{
    if (c->st != OD_OK || c->need)
        return 0;
    if (n > c->file_size || c->at > c->file_size - n) {
        c->st = od_fail_at(c->err, OD_ERR_FORMAT, c->at, "the header runs past the end of the file "
                           "(%llu bytes): truncated", (unsigned long long)c->file_size);
        return 0;
    }
    if (c->at + n > c->len) {
        c->need = c->at + n;
        return 0;
    }
    return 1;
}

static uint64_t le(cur *c, unsigned n)
{
    if (!room(c, n))
        return 0;
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v |= (uint64_t)c->b[c->at + i] << (8 * i);
    c->at += n;
    return v;
}

/* A string: its bytes stay in the buffer; *s points at them. */
static uint64_t str(cur *c, const uint8_t **s)
{
    uint64_t n = le(c, 8);
    *s = NULL;
    if (c->st != OD_OK || c->need)
        return 0;
    if (n > ((uint64_t)1 << 30)) {
        c->st = od_fail_at(c->err, OD_ERR_LIMIT, c->at - 8, "a %llu-byte string is absurd", (unsigned long long)n);
        return 0;
    }
    if (!room(c, n))
        return 0;
    *s = c->b + c->at;
    c->at += n;
    return n;
}

/* Bytes of a scalar of value type t (0 for strings and arrays; -1 unknown). */
static int scalar_bytes(uint32_t t)
{
    static const int sz[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    return t < sizeof sz / sizeof sz[0] ? sz[t] : -1;
}

/* What the config needs from the metadata: numbers by key suffix, the token count. */
typedef struct {
    const char *suffix;
    double value;
    int set;
} meta;

enum {
    M_LAYERS, M_HIDDEN, M_FFN, M_HEADS, M_KV, M_CTX, M_KEYLEN, M_VALLEN, M_SLIDING, M_EXPERTS,
    M_USED, M_EXPERT_FFN, M_SHARED, M_DENSE, M_KVLORA, M_QLORA, M_ROPE, M_SSM_INNER, M_SSM_STATE,
    M_SSM_CONV, M_SSM_DT, M_VOCAB, N_META
};

static const char *const SUFFIX[N_META] = {
    "block_count", "embedding_length", "feed_forward_length", "attention.head_count",
    "attention.head_count_kv", "context_length", "attention.key_length", "attention.value_length",
    "attention.sliding_window", "expert_count", "expert_used_count", "expert_feed_forward_length",
    "expert_shared_count", "leading_dense_block_count", "attention.kv_lora_rank",
    "attention.q_lora_rank", "rope.dimension_count", "ssm.inner_size", "ssm.state_size",
    "ssm.conv_kernel", "ssm.time_step_rank", "vocab_size"};

typedef struct {
    double v[N_META];
    int set[N_META];
    uint64_t tokens;            /* tokenizer.ggml.tokens entries */
    int has_output;             /* an output.weight tensor: the lm_head is not tied */
    uint64_t embd_rows;         /* token_embd.weight's second dimension */
} found;

/* Whether the key (n bytes) is "<architecture>.<suffix>". */
static int is_key(const uint8_t *k, uint64_t n, const char *arch, const char *suffix)
{
    size_t a = strlen(arch), s = strlen(suffix);
    return n == a + 1 + s && !memcmp(k, arch, a) && k[a] == '.' && !memcmp(k + a + 1, suffix, s);
}

static double scalar_value(cur *c, uint32_t t)
{
    int n = scalar_bytes(t);
    uint64_t raw = le(c, (unsigned)n);
    switch (t) {
    case 1: return (double)(int8_t)raw;
    case 3: return (double)(int16_t)raw;
    case 5: return (double)(int32_t)raw;
    case 11: return (double)(int64_t)raw;
    case 6: { float f; uint32_t u = (uint32_t)raw; memcpy(&f, &u, 4); return f; }
    case 12: { double d; memcpy(&d, &raw, 8); return d; }
    default: return (double)raw;
    }
}

/* One metadata value of type t; per-layer arrays of numbers record their largest. */
static void value(cur *c, uint32_t t, double *num, int *is_num, uint64_t *count, int depth)
{
    *is_num = 0;
    if (t == 8) {
        const uint8_t *s;
        str(c, &s);
        return;
    }
    if (t == 9) {
        uint32_t et = (uint32_t)le(c, 4);
        uint64_t n = le(c, 8);
        if (c->st != OD_OK || c->need)
            return;
        if (depth > 2 || et == 9 || scalar_bytes(et) < 0) {
            c->st = od_fail_at(c->err, OD_ERR_FORMAT, c->at - 12, "array of value type %u is not GGUF", et);
            return;
        }
        *count = n;
        double best = 0;
        int any = 0;
        for (uint64_t i = 0; i < n && c->st == OD_OK && !c->need; i++) {
            double v;
            int isn;
            uint64_t sub;
            value(c, et, &v, &isn, &sub, depth + 1);
            if (isn && (!any || v > best))
                best = v, any = 1;
        }
        *num = best;
        *is_num = any;
        return;
    }
    if (scalar_bytes(t) < 0) {
        c->st = od_fail_at(c->err, OD_ERR_FORMAT, c->at - 4, "metadata value type %u is not GGUF", t);
        return;
    }
    *num = scalar_value(c, t);
    *is_num = 1;
}

/* The metadata pairs: the architecture first (general.architecture comes first in files
 * llama.cpp writes; any order is read, the numbers matched against it afterwards). */
static void metadata(cur *c, od_gguf *g, found *f, const uint8_t **keys, uint64_t *klen, double *vals,
                     int *isnum, uint64_t n)
{
    for (uint64_t i = 0; i < n && c->st == OD_OK && !c->need; i++) {
        const uint8_t *k;
        uint64_t kn = str(c, &k);
        uint32_t t = (uint32_t)le(c, 4);
        if (c->st != OD_OK || c->need)
            return;
        uint64_t start = c->at, count = 0;
        if (t == 8 && kn == 20 && !memcmp(k, "general.architecture", 20)) {
            const uint8_t *s;
            uint64_t sn = str(c, &s);
            if (s)
                snprintf(g->architecture, sizeof g->architecture, "%.*s", (int)(sn < 31 ? sn : 31), (const char *)s);
            continue;
        }
        if (t == 8 && kn == 12 && !memcmp(k, "general.name", 12)) {
            const uint8_t *s;
            uint64_t sn = str(c, &s);
            if (s)
                snprintf(g->name, sizeof g->name, "%.*s", (int)(sn < 95 ? sn : 95), (const char *)s);
            continue;
        }
        value(c, t, &vals[i], &isnum[i], &count, 0);
        (void)start;
        if (kn == 21 && !memcmp(k, "tokenizer.ggml.tokens", 21))
            f->tokens = count;
        keys[i] = k;
        klen[i] = kn;
    }
}

/* One tensor info: its elements and bytes into the totals. */
static void tensor(cur *c, od_gguf *g, found *f, uint64_t data_size, uint64_t *max_end)
{
    const uint8_t *name;
    uint64_t nn = str(c, &name);
    uint64_t at = c->at;
    uint32_t nd = (uint32_t)le(c, 4);
    if (c->st != OD_OK || c->need)
        return;
    if (nd == 0 || nd > 8) {
        c->st = od_fail_at(c->err, OD_ERR_FORMAT, at, "tensor \"%.*s\": %u dimensions", (int)(nn < 60 ? nn : 60),
                           (const char *)name, nd);
        return;
    }
    uint64_t elems = 1, dims[8];
    for (uint32_t d = 0; d < nd; d++) {
        dims[d] = le(c, 8);
        if (dims[d] && elems > (((uint64_t)1 << 50) / dims[d])) {
            c->st = od_fail_at(c->err, OD_ERR_LIMIT, c->at - 8, "tensor \"%.*s\" is absurdly large",
                               (int)(nn < 60 ? nn : 60), (const char *)name);
            return;
        }
        elems *= dims[d];
    }
    uint32_t t = (uint32_t)le(c, 4);
    uint64_t off = le(c, 8);
    if (c->st != OD_OK || c->need)
        return;
    if (t >= N_TYPES || !TYPES[t].name) {
        c->st = od_fail_at(c->err, OD_ERR_FORMAT, c->at - 12, "tensor \"%.*s\": ggml type %u is not one ggml has",
                           (int)(nn < 60 ? nn : 60), (const char *)name, t);
        return;
    }
    if (elems % TYPES[t].block) {
        c->st = od_fail_at(c->err, OD_ERR_FORMAT, c->at - 12, "tensor \"%.*s\": %llu values are not whole %s blocks",
                           (int)(nn < 60 ? nn : 60), (const char *)name, (unsigned long long)elems, TYPES[t].name);
        return;
    }
    uint64_t bytes = elems / TYPES[t].block * TYPES[t].bytes;
    if (off > data_size || bytes > data_size - off) {
        c->st = od_fail_at(c->err, OD_ERR_FORMAT, c->at - 8, "tensor \"%.*s\": bytes %llu-%llu of the data, "
                           "which holds %llu", (int)(nn < 60 ? nn : 60), (const char *)name, (unsigned long long)off,
                           (unsigned long long)(off + bytes), (unsigned long long)data_size);
        return;
    }
    if (off + bytes > *max_end)
        *max_end = off + bytes;
    od_safetensors_totals *tot = &g->totals;
    tot->tensors++;
    tot->params += elems;
    tot->weight_bytes += bytes;
    if (bytes > tot->largest_tensor_bytes)
        tot->largest_tensor_bytes = bytes;
    int quantized = TYPES[t].block > 1;
    if (quantized)
        tot->packed_params += elems;
    size_t k = 0;
    while (k < g->n_types && strcmp(g->types[k].type, TYPES[t].name))
        k++;
    if (k == g->n_types && k < OD_GGUF_MAX_TYPES)
        g->types[g->n_types++].type = TYPES[t].name;
    if (k < g->n_types) {
        g->types[k].tensors++;
        g->types[k].params += elems;
        g->types[k].bytes += bytes;
    }
    if (nn == 13 && !memcmp(name, "output.weight", 13))
        f->has_output = 1;
    if (nn == 17 && !memcmp(name, "token_embd.weight", 17) && nd >= 2)
        f->embd_rows = dims[1];
}

/* The family a llama.cpp architecture is (its HF model_type). */
static const char *family(const char *arch, const found *f)
{
    static const struct { const char *arch, *mt; } MAP[] = {
        {"llama", "llama"}, {"qwen2", "qwen2"}, {"qwen3", "qwen3"}, {"qwen2moe", "qwen2_moe"},
        {"qwen3moe", "qwen3_moe"}, {"gemma", "gemma"}, {"gemma2", "gemma2"}, {"gemma3", "gemma3_text"},
        {"phi3", "phi3"}, {"phi2", "phi"}, {"falcon", "falcon"}, {"gpt2", "gpt2"},
        {"starcoder2", "starcoder2"}, {"gptneox", "gpt_neox"}, {"bloom", "bloom"}, {"mpt", "mpt"},
        {"olmo", "olmo"}, {"olmo2", "olmo2"}, {"command-r", "cohere"}, {"deepseek2", "deepseek_v2"},
        {"mamba", "mamba"},
    };
    if (!strcmp(arch, "llama") && f->set[M_EXPERTS] && f->v[M_EXPERTS] > 0)
        return "mixtral";
    for (size_t i = 0; i < sizeof MAP / sizeof MAP[0]; i++)
        if (!strcmp(MAP[i].arch, arch))
            return MAP[i].mt;
    return arch;
}

/* The metadata as config.json text, under every naming scheme the families read. */
static void write_config(od_gguf *g, const found *f)
{
    char *o = g->config;
    size_t n = sizeof g->config, l = 0;
#define PUT(...) do { int k_ = snprintf(o + l, n - l, __VA_ARGS__); if (k_ > 0 && (size_t)k_ < n - l) l += (size_t)k_; } while (0)
#define NUM(key, i) do { if (f->set[i]) PUT(", \"%s\": %.0f", key, f->v[i]); } while (0)
    PUT("{\"model_type\": \"%s\", \"tie_word_embeddings\": %s", family(g->architecture, f),
        f->has_output ? "false" : "true");
    static const char *const hidden[] = {"hidden_size", "n_embd", "d_model"};
    static const char *const layers[] = {"num_hidden_layers", "n_layer", "n_layers"};
    static const char *const heads[] = {"num_attention_heads", "n_head", "n_heads"};
    static const char *const ffn[] = {"intermediate_size", "n_inner", "ffn_dim", "ffn_hidden_size"};
    for (size_t i = 0; i < 3; i++) {
        NUM(hidden[i], M_HIDDEN);
        NUM(layers[i], M_LAYERS);
        NUM(heads[i], M_HEADS);
    }
    for (size_t i = 0; i < 4; i++)
        NUM(ffn[i], M_FFN);
    NUM("num_key_value_heads", M_KV);
    NUM("num_kv_heads", M_KV);
    NUM("max_position_embeddings", M_CTX);
    NUM("head_dim", M_KEYLEN);
    NUM("sliding_window", M_SLIDING);
    NUM("num_local_experts", M_EXPERTS);
    NUM("num_experts", M_EXPERTS);
    NUM("n_routed_experts", M_EXPERTS);
    NUM("num_experts_per_tok", M_USED);
    NUM("moe_intermediate_size", M_EXPERT_FFN);
    NUM("n_shared_experts", M_SHARED);
    NUM("first_k_dense_replace", M_DENSE);
    NUM("kv_lora_rank", M_KVLORA);
    NUM("q_lora_rank", M_QLORA);
    if (f->set[M_KVLORA]) { /* MLA: the key is nope + rope, the value its own width */
        NUM("qk_rope_head_dim", M_ROPE);
        if (f->set[M_KEYLEN] && f->set[M_ROPE])
            PUT(", \"qk_nope_head_dim\": %.0f", f->v[M_KEYLEN] - f->v[M_ROPE]);
        NUM("v_head_dim", M_VALLEN);
    }
    NUM("intermediate_size", M_SSM_INNER);
    NUM("state_size", M_SSM_STATE);
    NUM("conv_kernel", M_SSM_CONV);
    NUM("time_step_rank", M_SSM_DT);
    if (!strcmp(g->architecture, "falcon"))
        PUT(", \"new_decoder_architecture\": %s", f->set[M_KV] && f->v[M_KV] > 1 ? "true" : "false");
    double vocab = f->set[M_VOCAB] ? f->v[M_VOCAB] : f->tokens ? (double)f->tokens : (double)f->embd_rows;
    if (vocab > 0)
        PUT(", \"vocab_size\": %.0f", vocab);
    PUT("}");
#undef NUM
#undef PUT
}

od_status od_gguf_parse(const uint8_t *buf, size_t len, uint64_t file_size, od_gguf *out, od_error *err)
{
    cur c = {buf, len, file_size, 0, 0, err, OD_OK};
    od_gguf g;
    memset(&g, 0, sizeof g);
    memset(out, 0, sizeof *out);
    uint64_t magic = le(&c, 4);
    if (c.need) {
        out->need_bytes = c.need;
        return OD_OK;
    }
    if (c.st != OD_OK)
        return c.st;
    if (magic != 0x46554747) /* "GGUF" */
        return od_fail_at(err, OD_ERR_FORMAT, 0, "not a GGUF file (no \"GGUF\" magic)");
    g.version = (uint32_t)le(&c, 4);
    g.n_tensors = le(&c, 8);
    g.n_metadata = le(&c, 8);
    if (c.st == OD_OK && !c.need && (g.version < 2 || g.version > 3))
        return od_fail_at(err, OD_ERR_FORMAT, 4, "GGUF version %u (2 and 3 are read)", g.version);
    if (c.st == OD_OK && !c.need && (g.n_tensors > (1u << 20) || g.n_metadata > (1u << 20)))
        return od_fail_at(err, OD_ERR_LIMIT, 8, "%llu tensors and %llu metadata pairs are absurd",
                          (unsigned long long)g.n_tensors, (unsigned long long)g.n_metadata);
    found f;
    memset(&f, 0, sizeof f);
    size_t nm = c.need || c.st ? 0 : (size_t)g.n_metadata;
    const uint8_t **keys = nm ? calloc(nm, sizeof *keys) : NULL;
    uint64_t *klen = nm ? calloc(nm, sizeof *klen) : NULL;
    double *vals = nm ? calloc(nm, sizeof *vals) : NULL;
    int *isnum = nm ? calloc(nm, sizeof *isnum) : NULL;
    if (nm && (!keys || !klen || !vals || !isnum)) {
        free(keys), free(klen), free(vals), free(isnum);
        return od_fail(err, OD_ERR_NOMEM, "out of memory reading the GGUF metadata");
    }
    metadata(&c, &g, &f, keys, klen, vals, isnum, nm);
    for (size_t i = 0; i < nm && c.st == OD_OK && !c.need; i++)
        for (int k = 0; k < N_META && keys[i]; k++)
            if (isnum[i] && is_key(keys[i], klen[i], g.architecture, SUFFIX[k]))
                f.v[k] = vals[i], f.set[k] = 1;
    free(keys), free(klen), free(vals), free(isnum);
    uint64_t max_end = 0;
    /* the data follows the header, aligned (general.alignment, 32 by default): the
     * offsets are checked against what is left of the file */
    uint64_t data_size = file_size > c.at ? file_size - c.at : 0;
    for (uint64_t i = 0; i < g.n_tensors && c.st == OD_OK && !c.need; i++)
        tensor(&c, &g, &f, data_size, &max_end);
    if (c.need) {
        out->need_bytes = c.need;
        return OD_OK;
    }
    if (c.st != OD_OK)
        return c.st;
    g.header_bytes = c.at;
    if (max_end > (file_size > c.at ? file_size - c.at : 0))
        return od_fail_at(err, OD_ERR_FORMAT, c.at, "the tensors need %llu bytes of data; the file has %llu after "
                          "the header", (unsigned long long)max_end, (unsigned long long)(file_size - c.at));
    if (!g.architecture[0])
        return od_fail_at(err, OD_ERR_FORMAT, 24, "no general.architecture in the metadata");
    if (!f.set[M_LAYERS] || !f.set[M_HIDDEN])
        return od_fail_at(err, OD_ERR_FORMAT, 24, "no %s.block_count / %s.embedding_length in the metadata",
                          g.architecture, g.architecture);
    g.totals.files = 1;
    snprintf(g.totals.format, sizeof g.totals.format, "gguf");
    uint64_t most = 0;
    for (size_t k = 0; k < g.n_types; k++) {
        int q = strcmp(g.types[k].type, "F32") && strcmp(g.types[k].type, "F16") && strcmp(g.types[k].type, "BF16");
        if (q && g.types[k].params > most) {
            most = g.types[k].params;
            snprintf(g.totals.quant, sizeof g.totals.quant, "%s", g.types[k].type);
        }
    }
    write_config(&g, &f);
    *out = g;
    return OD_OK;
}
