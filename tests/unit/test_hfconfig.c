/* test_hfconfig.c - config.json reading: parameter layouts against published counts and
 * the measured runs' own n_params, and one clear error per kind of bad input. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include "slurp.h"
#include <jansson.h>

#include "read/hfconfig.h"

static uint64_t params_of(const char *path)
{
    size_t len;
    char *t = slurp(path, &len);
    od_model m;
    od_error err;
    od_status st = od_hfconfig_parse(t, len, &m, &err);
    if (st != OD_OK)
        fprintf(stderr, "%s: %s\n", path, err.msg);
    assert_int_equal(st, OD_OK);
    free(t);
    od_param_counts pc;
    od_model_count(&m, &pc);
    return pc.total;
}

/* Published parameter counts (tests/data/configs/README.md). */
static void test_public_layouts(void **state)
{
    (void)state;
    assert_int_equal(params_of("tests/data/configs/llama-2-7b.json"), 6738415616ULL);
    assert_int_equal(params_of("tests/data/configs/mistral-7b-v0.1.json"), 7241732096ULL);
    assert_int_equal(params_of("tests/data/configs/mixtral-8x7b.json"), 46702792704ULL);
    assert_int_equal(params_of("tests/data/configs/gemma-2b.json"), 2506172416ULL);
    assert_int_equal(params_of("tests/data/configs/phi-3-mini-4k.json"), 3821079552ULL);
    assert_int_equal(params_of("tests/data/configs/falcon-7b.json"), 6921720704ULL);
    assert_int_equal(params_of("tests/data/configs/pythia-160m.json"), 162322944ULL);
}

/* Every measured run's config gives exactly the n_params PyTorch counted. */
static void test_measured_layouts(void **state)
{
    (void)state;
    const char *files[] = {"tests/data/measured/train.json", "tests/data/measured/infer.json"};
    for (size_t f = 0; f < 2; f++) {
        json_t *root = json_load_file(files[f], 0, NULL);
        assert_non_null(root);
        json_t *cases = json_object_get(root, "cases");
        for (size_t i = 0; i < json_array_size(cases); i++) {
            json_t *c = json_array_get(cases, i);
            char *txt = json_dumps(json_object_get(c, "hf_config"), 0);
            od_model m;
            od_error err;
            assert_int_equal(od_hfconfig_parse(txt, strlen(txt), &m, &err), OD_OK);
            od_param_counts pc;
            od_model_count(&m, &pc);
            assert_int_equal(pc.total, json_integer_value(json_object_get(c, "n_params")));
            free(txt);
        }
        json_decref(root);
    }
}

static od_status parse(const char *text, od_error *err)
{
    od_model m;
    return od_hfconfig_parse(text, strlen(text), &m, err);
}

static void test_errors(void **state)
{
    (void)state;
    od_error err;
    /* not JSON: offset of the syntax error */
    assert_int_equal(parse("{\"model_type\": \"llama\",, }", &err), OD_ERR_FORMAT);
    assert_true(err.has_offset);
    assert_int_equal(err.offset, 23);
    assert_int_equal(parse("", &err), OD_ERR_FORMAT);
    assert_int_equal(parse("[1, 2]", &err), OD_ERR_FORMAT);
    /* missing field, named */
    assert_int_equal(parse("{\"model_type\": \"llama\", \"hidden_size\": 64}", &err), OD_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "num_hidden_layers"));
    assert_int_equal(parse("{\"hidden_size\": 64}", &err), OD_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "model_type"));
    /* unknown model_type */
    assert_int_equal(parse("{\"model_type\": \"xlnet\"}", &err), OD_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "unknown model_type \"xlnet\""));
    /* negative size: named, with the key's offset */
    const char *neg = "{\"model_type\": \"gpt2\", \"n_embd\": -768, \"n_layer\": 2, \"n_head\": 2, "
                      "\"vocab_size\": 10}";
    assert_int_equal(parse(neg, &err), OD_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "n_embd"));
    assert_true(err.has_offset);
    assert_int_equal(err.offset, 23);
    /* wrong type */
    assert_int_equal(parse("{\"model_type\": \"gpt2\", \"n_embd\": \"768\"}", &err), OD_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "must be an integer"));
    assert_int_equal(parse("{\"model_type\": 7}", &err), OD_ERR_FORMAT);
    /* absurd sizes */
    const char *big = "{\"model_type\": \"llama\", \"hidden_size\": 1099511627776, "
                      "\"num_hidden_layers\": 2, \"num_attention_heads\": 2, \"vocab_size\": 10, "
                      "\"intermediate_size\": 10}";
    assert_int_not_equal(parse(big, &err), OD_OK);
    const char *big2 = "{\"model_type\": \"llama\", \"hidden_size\": 64, "
                       "\"num_hidden_layers\": 100000, \"num_attention_heads\": 2, "
                       "\"vocab_size\": 10, \"intermediate_size\": 10}";
    assert_int_equal(parse(big2, &err), OD_ERR_LIMIT);
    /* heads that do not divide */
    const char *gqa = "{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_hidden_layers\": 2, "
                      "\"num_attention_heads\": 4, \"num_key_value_heads\": 3, \"vocab_size\": 10, "
                      "\"intermediate_size\": 10}";
    assert_int_equal(parse(gqa, &err), OD_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "num_key_value_heads"));
    /* zero is not a size */
    const char *zero = "{\"model_type\": \"llama\", \"hidden_size\": 0, \"num_hidden_layers\": 2, "
                       "\"num_attention_heads\": 4, \"vocab_size\": 10, \"intermediate_size\": 10}";
    assert_int_equal(parse(zero, &err), OD_ERR_FORMAT);
    /* a bad dropout */
    assert_int_equal(parse("{\"model_type\": \"gpt2\", \"n_embd\": 8, \"n_layer\": 1, \"n_head\": 2, "
                           "\"vocab_size\": 10, \"attn_pdrop\": 1.5}", &err), OD_ERR_FORMAT);
}

static void test_families(void **state)
{
    (void)state;
    od_model m;
    od_error err;
    /* Gemma 3 keeps the language model in text_config */
    const char *g3 = "{\"model_type\": \"gemma3\", \"text_config\": {\"model_type\": \"gemma3_text\", "
                     "\"hidden_size\": 256, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
                     "\"num_key_value_heads\": 1, \"head_dim\": 64, \"vocab_size\": 1000, "
                     "\"intermediate_size\": 512}}";
    assert_int_equal(od_hfconfig_parse(g3, strlen(g3), &m, &err), OD_OK);
    assert_int_equal(m.norm, OD_NORM_RMS_GEMMA);
    assert_true(m.qk_norm && m.tied_embeddings);
    /* Falcon multi-query: one KV head */
    const char *fa = "{\"model_type\": \"falcon\", \"hidden_size\": 256, \"num_hidden_layers\": 2, "
                     "\"num_attention_heads\": 4, \"vocab_size\": 1000, \"multi_query\": true}";
    assert_int_equal(od_hfconfig_parse(fa, strlen(fa), &m, &err), OD_OK);
    assert_int_equal(m.kv_heads, 1);
    /* Qwen2-MoE: shared expert */
    const char *qm = "{\"model_type\": \"qwen2_moe\", \"hidden_size\": 256, \"num_hidden_layers\": 2, "
                     "\"num_attention_heads\": 4, \"vocab_size\": 1000, \"intermediate_size\": 512, "
                     "\"num_experts\": 8, \"num_experts_per_tok\": 2, \"moe_intermediate_size\": 64, "
                     "\"shared_expert_intermediate_size\": 128}";
    assert_int_equal(od_hfconfig_parse(qm, strlen(qm), &m, &err), OD_OK);
    assert_int_equal(m.experts, 8);
    assert_int_equal(m.shared_intermediate, 128);
    od_param_counts pc;
    od_model_count(&m, &pc);
    assert_true(pc.active < pc.total);
}


static uint64_t params_text(const char *json, od_model *m)
{
    od_error err;
    od_status st = od_hfconfig_parse(json, strlen(json), m, &err);
    if (st != OD_OK)
        fprintf(stderr, "%s\n", err.msg);
    assert_int_equal(st, OD_OK);
    od_param_counts pc;
    od_model_count(m, &pc);
    return pc.total;
}

/* The other families' layouts against the counts transformers reports for the public
 * checkpoints (the sizes of their config.json, inline; four real files in
 * examples/configs). */
static void test_more_families(void **state)
{
    (void)state;
    od_model m;
    assert_int_equal(params_of("examples/configs/opt-13b.json"), 12853473280ULL);
    assert_int_equal(params_of("examples/configs/bert-base-cased.json"), 108310272ULL);
    assert_int_equal(params_of("examples/configs/phi-2.json"), 2779683840ULL);
    assert_int_equal(params_of("examples/configs/gemma-2-9b.json"), 9241705984ULL);
    assert_int_equal(params_of("examples/configs/deepseek-v2-lite.json"), 15706484224ULL);
    /* google-t5/t5-3b: DeepSpeed's memory.rst counts "2851M total params" */
    assert_int_equal(params_of("examples/configs/t5-3b.json"), 2851598336ULL);
    /* mosaicml/mpt-7b: ALiBi, fused Wqkv, LayerNorms without biases, tied */
    assert_int_equal(params_text("{\"model_type\": \"mpt\", \"d_model\": 4096, \"n_heads\": 32, "
                                 "\"n_layers\": 32, \"expansion_ratio\": 4, \"max_seq_len\": 2048, "
                                 "\"vocab_size\": 50432, \"attn_config\": {\"alibi\": true}}", &m),
                     6649286656ULL);
    assert_true(m.alibi && m.positions == 0);
    /* bigscience/bloom-560m: ALiBi, embedding LayerNorm */
    assert_int_equal(params_text("{\"model_type\": \"bloom\", \"hidden_size\": 1024, \"n_layer\": 24, "
                                 "\"n_head\": 16, \"vocab_size\": 250880}", &m), 559214592ULL);
    assert_true(m.alibi && m.embed_norm);
    /* deepseek-ai/DeepSeek-V2-Lite: MLA without q_lora, 1 dense + 26 MoE layers */
    assert_int_equal(params_text("{\"model_type\": \"deepseek_v2\", \"hidden_size\": 2048, "
                                 "\"num_hidden_layers\": 27, \"num_attention_heads\": 16, "
                                 "\"num_key_value_heads\": 16, \"kv_lora_rank\": 512, "
                                 "\"q_lora_rank\": null, \"qk_nope_head_dim\": 128, "
                                 "\"qk_rope_head_dim\": 64, \"v_head_dim\": 128, "
                                 "\"intermediate_size\": 10944, \"moe_intermediate_size\": 1408, "
                                 "\"n_routed_experts\": 64, \"n_shared_experts\": 2, "
                                 "\"num_experts_per_tok\": 6, \"first_k_dense_replace\": 1, "
                                 "\"moe_layer_freq\": 1, \"vocab_size\": 102400, "
                                 "\"tie_word_embeddings\": false}", &m), 15706484224ULL);
    assert_int_equal(od_model_moe_layers(&m), 26);
    /* databricks/dbrx-base: nested attn_config / ffn_config */
    assert_int_equal(params_text("{\"model_type\": \"dbrx\", \"d_model\": 6144, \"n_heads\": 48, "
                                 "\"n_layers\": 40, \"vocab_size\": 100352, \"attn_config\": "
                                 "{\"kv_n_heads\": 8}, \"ffn_config\": {\"ffn_hidden_size\": 10752, "
                                 "\"moe_num_experts\": 16, \"moe_top_k\": 4}}", &m), 131596523520ULL);
    /* allenai/OLMo-2-1124-7B: full-width q/k norms */
    assert_int_equal(params_text("{\"model_type\": \"olmo2\", \"hidden_size\": 4096, "
                                 "\"num_hidden_layers\": 32, \"num_attention_heads\": 32, "
                                 "\"intermediate_size\": 11008, \"vocab_size\": 100352}", &m),
                     7298617344ULL);
    /* allenai/OLMo-1B-hf: non-parametric LayerNorm */
    assert_int_equal(params_text("{\"model_type\": \"olmo\", \"hidden_size\": 2048, "
                                 "\"num_hidden_layers\": 16, \"num_attention_heads\": 16, "
                                 "\"intermediate_size\": 8192, \"vocab_size\": 50304, "
                                 "\"tie_word_embeddings\": true}", &m), 1176764416ULL);
    /* bigcode/starcoder2-3b: biases everywhere, plain MLP, GQA */
    assert_int_equal(params_text("{\"model_type\": \"starcoder2\", \"hidden_size\": 3072, "
                                 "\"num_hidden_layers\": 30, \"num_attention_heads\": 24, "
                                 "\"num_key_value_heads\": 2, \"intermediate_size\": 12288, "
                                 "\"vocab_size\": 49152, \"sliding_window\": 4096}", &m),
                     3030371328ULL);
    /* CohereForAI/c4ai-command-r-v01: parallel block, bias-free LayerNorm, tied */
    assert_int_equal(params_text("{\"model_type\": \"cohere\", \"hidden_size\": 8192, "
                                 "\"num_hidden_layers\": 40, \"num_attention_heads\": 64, "
                                 "\"intermediate_size\": 22528, \"vocab_size\": 256000}", &m),
                     34980831232ULL);
    /* FacebookAI/roberta-base: one token type, 514 position rows */
    assert_int_equal(params_text("{\"model_type\": \"roberta\", \"hidden_size\": 768, "
                                 "\"num_hidden_layers\": 12, \"num_attention_heads\": 12, "
                                 "\"intermediate_size\": 3072, \"vocab_size\": 50265, "
                                 "\"max_position_embeddings\": 514, \"type_vocab_size\": 1}", &m),
                     124645632ULL);
    assert_true(m.encoder);
    /* Gemma 2 alternates local and global layers: half of them slide */
    assert_int_equal(params_of("examples/configs/gemma-2-9b.json"), 9241705984ULL);
    size_t len;
    char *t = slurp("examples/configs/gemma-2-9b.json", &len);
    od_error err;
    assert_int_equal(od_hfconfig_parse(t, len, &m, &err), OD_OK);
    free(t);
    assert_int_equal(m.sliding_layers, 21);
}

static void load_model(const char *path, od_model *m)
{
    size_t len;
    char *t = slurp(path, &len);
    od_error err;
    od_status st = od_hfconfig_parse(t, len, m, &err);
    if (st != OD_OK)
        fprintf(stderr, "%s: %s\n", path, err.msg);
    assert_int_equal(st, OD_OK);
    free(t);
}

/* State-space and the remaining encoder / encoder-decoder families, on their published
 * config.json (tests/data/configs/README.md gives each count's source). */
static void test_ssm_and_encdec_families(void **state)
{
    (void)state;
    od_model m;
    od_param_counts pc;
    /* state-spaces/mamba-130m-hf: 129M on the Hub; no attention, no MLP, tied lm_head */
    load_model("tests/data/configs/mamba-130m.json", &m);
    od_model_count(&m, &pc);
    assert_int_equal(pc.total, 129135360ULL);
    assert_true(fabs((double)pc.total / 129e6 - 1) < 0.005);
    assert_int_equal(m.ssm_layers, 24);
    assert_int_equal(m.ssm_dt_rank, 48);
    assert_true(m.no_mlp);
    assert_true(od_model_kv_bytes_per_token(&m, 2) == 0);
    /* conv 1536 x 4 + SSM 1536 x 16 a layer, 24 layers, bf16 */
    assert_true(od_model_ssm_state_bytes(&m, 2) == 24.0 * 1536 * (4 + 16) * 2);
    /* "auto" time_step_rank is ceil(hidden / 16) */
    assert_int_equal(params_text("{\"model_type\": \"mamba\", \"hidden_size\": 768, "
                                 "\"num_hidden_layers\": 24, \"vocab_size\": 50280, "
                                 "\"time_step_rank\": \"auto\"}", &m), 129135360ULL);
    /* ai21labs/AI21-Jamba-1.5-Mini (Jamba-v0.1's layout): 52B total, 12B active (AI21;
     * Lieber et al. 2024, arXiv:2403.19887); attention in 4 of 32 layers, MoE in 16 */
    load_model("tests/data/configs/jamba-1.5-mini.json", &m);
    od_model_count(&m, &pc);
    assert_int_equal(pc.total, 51570323328ULL);
    assert_true(fabs((double)pc.total / 51.6e9 - 1) < 0.005);
    assert_true(fabs((double)pc.active / 12e9 - 1) < 0.02);
    assert_int_equal(m.ssm_layers, 28);
    assert_int_equal(od_model_moe_layers(&m), 16);
    /* microsoft/deberta-v3-base: 86M backbone + 98M embedding parameters (its model card);
     * shared key projections for the relative positions, no absolute ones, no pooler */
    load_model("tests/data/configs/deberta-v3-base.json", &m);
    od_model_count(&m, &pc);
    assert_int_equal(pc.total, 183831552ULL);
    assert_true(fabs((double)(pc.total - pc.embedding) / 86e6 - 1) < 0.01);
    assert_true(fabs((double)pc.embedding / 98e6 - 1) < 0.01);
    assert_true(m.encoder && m.eager_only && m.positions == 0);
    /* the same without share_att_key: pos_key_proj and pos_query_proj in every layer */
    assert_int_equal(params_text("{\"model_type\": \"deberta-v2\", \"hidden_size\": 768, "
                                 "\"num_hidden_layers\": 12, \"num_attention_heads\": 12, "
                                 "\"intermediate_size\": 3072, \"vocab_size\": 128100, "
                                 "\"relative_attention\": true, \"position_buckets\": 256, "
                                 "\"norm_rel_ebd\": \"layer_norm\", \"pos_att_type\": [\"p2c\", "
                                 "\"c2p\"], \"position_biased_input\": false, "
                                 "\"type_vocab_size\": 0}", &m),
                     183831552ULL + 12ULL * 2 * (768 * 768 + 768));
    /* facebook/bart-large(-mnli)'s BartForConditionalGeneration layout: 406M on the Hub */
    load_model("tests/data/configs/bart-large-mnli.json", &m);
    od_model_count(&m, &pc);
    assert_int_equal(pc.total, 406291456ULL);
    assert_true(fabs((double)pc.total / 406e6 - 1) < 0.005);
    assert_true(m.encdec && m.layers == 24);
    /* the decoder's self-attention caches 2 x 16 heads x 64 per token and layer */
    assert_true(od_model_kv_bytes_per_token(&m, 2) == 12.0 * 2 * 1024 * 2);
}

/* The families whose counts were not yet checked, on their published sizes (model cards):
 * Qwen/Qwen2.5-0.5B 0.49B (0.36B non-embedding), Qwen/Qwen3-0.6B 0.6B (0.44B
 * non-embedding), Qwen/Qwen3-30B-A3B 30.5B with 3.3B activated, deepseek-ai/DeepSeek-V3
 * 671B with 37B activated (its paper; the MTP module's 14B are not part of the model),
 * EleutherAI/gpt-j-6b 6,053,381,344 (its README). */
static void test_published_sizes(void **state)
{
    (void)state;
    od_model m;
    od_param_counts pc;
    static const struct { const char *json; double total, other; int active; } C[] = {
        {"{\"model_type\": \"qwen2\", \"hidden_size\": 896, \"num_hidden_layers\": 24, \"num_attention_heads\": 14, \"num_key_value_heads\": 2, \"intermediate_size\": 4864, \"vocab_size\": 151936, \"tie_word_embeddings\": true}", 0.494e9, 0.358e9, 0},
        {"{\"model_type\": \"qwen3\", \"hidden_size\": 1024, \"num_hidden_layers\": 28, \"num_attention_heads\": 16, \"num_key_value_heads\": 8, \"head_dim\": 128, \"intermediate_size\": 3072, \"vocab_size\": 151936, \"tie_word_embeddings\": true}", 0.596e9, 0.44e9, 0},
        {"{\"model_type\": \"qwen3_moe\", \"hidden_size\": 2048, \"num_hidden_layers\": 48, \"num_attention_heads\": 32, \"num_key_value_heads\": 4, \"head_dim\": 128, \"intermediate_size\": 6144, \"moe_intermediate_size\": 768, \"num_experts\": 128, \"num_experts_per_tok\": 8, \"decoder_sparse_step\": 1, \"mlp_only_layers\": [], \"vocab_size\": 151936, \"tie_word_embeddings\": false}", 30.5e9, 3.3e9, 1},
        {"{\"model_type\": \"deepseek_v3\", \"first_k_dense_replace\": 3, \"hidden_act\": \"silu\", \"hidden_size\": 7168, \"intermediate_size\": 18432, \"kv_lora_rank\": 512, \"moe_intermediate_size\": 2048, \"n_routed_experts\": 256, \"n_shared_experts\": 1, \"num_attention_heads\": 128, \"num_experts_per_tok\": 8, \"num_hidden_layers\": 61, \"num_key_value_heads\": 128, \"num_nextn_predict_layers\": 1, \"q_lora_rank\": 1536, \"qk_nope_head_dim\": 128, \"qk_rope_head_dim\": 64, \"tie_word_embeddings\": false, \"v_head_dim\": 128, \"vocab_size\": 129280, \"moe_layer_freq\": 1}", 671e9, 37e9, 1},
        {"{\"model_type\": \"gptj\", \"n_embd\": 4096, \"n_layer\": 28, \"n_head\": 16, \"n_positions\": 2048, \"rotary_dim\": 64, \"vocab_size\": 50400, \"n_inner\": null, \"tie_word_embeddings\": false}", 6053381344.0, 0, 0},
    };
    for (size_t i = 0; i < sizeof C / sizeof C[0]; i++) {
        params_text(C[i].json, &m);
        od_model_count(&m, &pc);
        double other = C[i].active ? (double)pc.active : (double)(pc.total - pc.embedding);
        if (fabs((double)pc.total / C[i].total - 1) > 0.005 ||
            (C[i].other && fabs(other / C[i].other - 1) > 0.02))
            fail_msg("%s: %llu total, %.0f %s", m.model_type, (unsigned long long)pc.total,
                     other, C[i].active ? "active" : "non-embedding");
    }
}

/* Any other model_type with the generic fields: a Llama-style block, marked generic;
 * without them, the error names the field. */
static void test_generic_fallback(void **state)
{
    (void)state;
    od_model m;
    od_error err;
    uint64_t h = 256, L = 2, I = 512, V = 1000;
    uint64_t want = 2 * V * h + L * (4 * h * h + 3 * h * I + 2 * h) + h;
    assert_int_equal(params_text("{\"model_type\": \"internlm2_like\", \"hidden_size\": 256, "
                                 "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
                                 "\"intermediate_size\": 512, \"vocab_size\": 1000}", &m), want);
    assert_true(m.generic && m.gated_mlp && !m.tied_embeddings);
    assert_int_equal(params_text("{\"model_type\": \"internlm2_like\", \"hidden_size\": 256, "
                                 "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
                                 "\"intermediate_size\": 512, \"vocab_size\": 1000, "
                                 "\"tie_word_embeddings\": true}", &m), want - V * h);
    const char *mla = "{\"model_type\": \"deepseek_v2\", \"hidden_size\": 64, "
                      "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"vocab_size\": 10, "
                      "\"intermediate_size\": 10, \"kv_lora_rank\": 1099511627776, "
                      "\"qk_rope_head_dim\": 4, \"qk_nope_head_dim\": 8, \"v_head_dim\": 8}";
    assert_int_equal(od_hfconfig_parse(mla, strlen(mla), &m, &err), OD_ERR_LIMIT);
    const char *xl = "{\"model_type\": \"xlnet\", \"d_model\": 512}";
    assert_int_equal(od_hfconfig_parse(xl, strlen(xl), &m, &err), OD_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "hidden_size"));
}

/* Beyond text decoders: vision transformers, two-tower CLIP / SigLIP, Whisper, diffusers'
 * UNet and DiT, against the counts their libraries report for the public checkpoints
 * (google/vit-base-patch16-224 86,567,656; openai/clip-vit-base-patch32 151,277,313;
 * openai/whisper-tiny 37,760,640 and whisper-large-v3 1,543,490,560; Stable Diffusion 1.5's
 * UNet 859,520,964, 2.1's 865,910,724, SDXL's 2,567,463,684). SigLIP (203M on the Hub) and
 * diffusers' DiT-XL/2 are counted module by module from modeling_siglip.py and attention.py
 * (each BasicTransformerBlock's AdaLayerNormZero keeps its own timestep and class
 * embedders: 749,826,464, where the original DiT's shared ones give 675M). */
static void test_reach(void **state)
{
    (void)state;
    od_model m;
    assert_int_equal(params_of("tests/data/configs/vit-base-patch16-224.json"), 86567656ULL);
    load_model("tests/data/configs/vit-base-patch16-224.json", &m);
    assert_true(m.vision && m.encoder && m.image_tokens == 197 && !m.vocab);
    assert_int_equal(params_of("tests/data/configs/clip-vit-base-patch32.json"), 151277313ULL);
    load_model("tests/data/configs/clip-vit-base-patch32.json", &m);
    assert_true(m.image_tokens == 50 && m.tower2_layers == 12 && m.tower2_tokens == 77 && m.tower2_hidden == 512);
    assert_int_equal(params_of("tests/data/configs/siglip-base-patch16-224.json"), 203155970ULL);
    assert_int_equal(params_of("tests/data/configs/whisper-tiny.json"), 37760640ULL);
    assert_int_equal(params_of("tests/data/configs/whisper-large-v3.json"), 1543490560ULL);
    load_model("tests/data/configs/whisper-tiny.json", &m);
    assert_true(m.encdec && m.encoder_tokens == 1500 && m.max_positions == 448 && m.layers == 8);
    assert_int_equal(params_of("tests/data/configs/sd15-unet.json"), 859520964ULL);
    assert_int_equal(params_of("tests/data/configs/sdxl-unet.json"), 2567463684ULL);
    assert_int_equal(params_text("{\"_class_name\": \"UNet2DConditionModel\", \"block_out_channels\": "
                                 "[320, 640, 1280, 1280], \"cross_attention_dim\": 1024, \"down_block_types\": "
                                 "[\"CrossAttnDownBlock2D\", \"CrossAttnDownBlock2D\", \"CrossAttnDownBlock2D\", "
                                 "\"DownBlock2D\"], \"up_block_types\": [\"UpBlock2D\", \"CrossAttnUpBlock2D\", "
                                 "\"CrossAttnUpBlock2D\", \"CrossAttnUpBlock2D\"], \"sample_size\": 96, "
                                 "\"use_linear_projection\": true}", &m), 865910724ULL);
    assert_true(m.unet && m.unet_levels == 4 && m.image_tokens == 96 * 96);
    assert_int_equal(params_of("tests/data/configs/dit-xl-2-256.json"), 749826464ULL);
    /* a patch that does not tile the image, a UNet without its levels */
    od_error err;
    const char *bad = "{\"model_type\": \"vit\", \"hidden_size\": 64, \"num_hidden_layers\": 1, "
                      "\"num_attention_heads\": 4, \"intermediate_size\": 128, \"image_size\": 30, "
                      "\"patch_size\": 16}";
    assert_int_equal(od_hfconfig_parse(bad, strlen(bad), &m, &err), OD_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "patch_size"));
    const char *nounet = "{\"_class_name\": \"UNet2DConditionModel\"}";
    assert_int_equal(od_hfconfig_parse(nounet, strlen(nounet), &m, &err), OD_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "block_out_channels"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_public_layouts),
        cmocka_unit_test(test_measured_layouts),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_families),
        cmocka_unit_test(test_more_families),
        cmocka_unit_test(test_ssm_and_encdec_families),
        cmocka_unit_test(test_published_sizes),
        cmocka_unit_test(test_generic_fallback),
        cmocka_unit_test(test_reach),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
