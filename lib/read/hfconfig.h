/* hfconfig.h - read a Hugging Face config.json into an od_model.
 *
 * The families it knows are rows of read/families.def (which keys each model_type reads,
 * what its block holds). Knows the parameter layouts of gpt2, llama, mistral, qwen2, qwen3, gemma, gemma2,
 * gemma3_text, phi, phi3, falcon, gpt_neox, gptj, opt, bloom, mpt, starcoder2, olmo,
 * olmo2, cohere, mixtral, qwen2_moe, qwen3_moe, deepseek_v2, deepseek_v3, dbrx, the
 * encoders bert and roberta, and the encoder-decoder t5. Any other model_type with the
 * generic fields (hidden_size, num_hidden_layers, num_attention_heads, num_key_value_heads, intermediate_size,
 * vocab_size) is read as a Llama-style block and marked generic. Untrusted
 * input: non-JSON, wrong types, missing or negative sizes and absurd values fail with a
 * sentence naming the field (and a byte offset for JSON syntax errors). */
#ifndef OD_HFCONFIG_H
#define OD_HFCONFIG_H

#include "read/models.h"

/* Parse len bytes of config.json text. On OD_OK *out is filled (a plain value, nothing
 * to free). Fails with OD_ERR_FORMAT (bad JSON, missing/mistyped field, an unknown
 * model_type without the generic fields) or OD_ERR_LIMIT (absurd sizes); *out is untouched then. */
od_status od_hfconfig_parse(const char *text, size_t len, od_model *out, od_error *err);

#endif
