/* models.h - what a transformer (decoder-only, or a BERT-style encoder) looks like to the memory estimator:
 * its dimensions and the handful of architectural choices that change what PyTorch
 * allocates (norm kind, gated MLP, fused projections, dropout, experts, ...).
 *
 * An od_model is a plain value: no heap memory, nothing to free. Fill one from a
 * Hugging Face config.json with od_hfconfig_parse (hfconfig.h) or from bare sizes with
 * od_model_from_sizes. */
#ifndef OD_MODELS_H
#define OD_MODELS_H

#include "oomdoc/od.h"

/* How the block normalizes; each saves different tensors for backward. */
typedef enum {
    OD_NORM_LAYER,      /* nn.LayerNorm: one fused op, saves its input + row stats */
    OD_NORM_RMS,        /* Llama-style Python RMSNorm: upcast, pow, mean, rsqrt, mul, downcast */
    OD_NORM_RMS_GEMMA   /* Gemma: computes in fp32, scales by (1 + weight), casts back */
} od_norm_kind;

/* The MLP activation as transformers implements it. */
typedef enum {
    OD_ACT_FUSED,       /* one ATen op (silu, gelu, gelu tanh, relu): saves its input */
    OD_ACT_GELU_NEW     /* "gelu_new": 0.5*x*(1+tanh(c*(x+0.044715*x^3))) in Python ops */
} od_act_kind;

typedef struct {
    char model_type[32];        /* config's model_type ("custom" for sizes given by hand) */
    uint64_t vocab;
    uint64_t hidden;
    uint64_t layers;
    uint64_t heads;
    uint64_t kv_heads;          /* = heads for MHA, 1 for MQA, between for GQA */
    uint64_t head_dim;
    uint64_t intermediate;      /* dense MLP width (per expert width below for MoE) */
    uint64_t positions;         /* rows of a learned position table; 0 with rotary */
    int gated_mlp;              /* gate/up/down (SwiGLU, GeGLU) rather than fc/proj */
    int fused_qkv;              /* one projection for q, k, v (GPT-2 c_attn, Phi-3 qkv_proj) */
    int fused_gate_up;          /* one projection for gate and up (Phi-3) */
    int qkv_bias, out_bias, mlp_bias, norm_bias;
    int tied_embeddings;
    int parallel_block;         /* attention and MLP in parallel on the block input:
                                 * 1 = one shared norm (Falcon-7B), 2 = a norm each (NeoX) */
    int qk_norm;                /* per-head RMSNorm on q and k (Qwen3, Gemma 3) */
    int sandwich_norm;          /* extra post-attention / post-MLP norms (Gemma 2/3) */
    int logit_softcap;          /* final tanh soft-capping of logits (Gemma 2) */
    uint64_t sliding_window;    /* local attention window (0 = none): longer sequences get
                                 * a materialized mask, which rules out flash attention */
    od_norm_kind norm;
    od_act_kind act;
    double attn_dropout, resid_dropout, embd_dropout;
    /* Mixture of experts (0 experts = dense). */
    uint64_t experts, experts_per_token, expert_intermediate;
    uint64_t shared_intermediate;   /* always-on shared expert width (Qwen-MoE), 0 if none */
    int shared_gate;                /* shared expert has a sigmoid gate (Qwen2-MoE) */
    uint64_t moe_every;             /* every n-th layer is MoE (1 = all) */
    uint64_t moe_first_dense;       /* the first n layers stay dense (DeepSeek) */
    int router_bias;                /* a per-expert score bias (DeepSeek-V3) */
    /* Layout details of other families. */
    int generic;                /* model_type unknown: read as a Llama-style block from the
                                 * generic fields; the CLI warns */
    int head_bias;              /* lm_head has a bias (GPT-J, Phi) */
    int embed_norm;             /* a LayerNorm right after the embeddings (BLOOM, BERT) */
    int norm_no_params;         /* non-parametric LayerNorm (OLMo) */
    int alibi;                  /* ALiBi position bias (BLOOM, MPT): a materialized bias,
                                 * no rotary, no flash kernel */
    uint64_t sliding_layers;    /* layers that attend within sliding_window (the rest are
                                 * global; Gemma 2/3 alternate); = layers when all do */
    uint64_t attention_chunk;   /* chunked local attention (Llama 4): a layer attends within
                                 * its chunk of this many tokens; 0 = none */
    uint64_t chunked_layers;    /* the layers that do (the rest are global) */
    /* Multi-head latent attention (DeepSeek-V2/V3); kv_lora_rank 0 = none. The KV cache
     * holds kv_lora_rank + qk_rope_dim values per token and layer. */
    uint64_t q_lora_rank, kv_lora_rank, qk_rope_dim, qk_nope_dim, v_head_dim;
    /* Encoders (BERT, RoBERTa): bidirectional, post-norm, no LM head. */
    int encoder;
    uint64_t type_vocab;        /* token-type embedding rows */
    int pooler;                 /* the pooler dense layer of BertModel */
    /* Encoder-decoders (T5): layers counts both stacks; what the uniform layers do not
     * hold (the decoder's cross-attention, relative position biases, the second final
     * norm) is in extra_params. */
    int encdec;
    uint64_t extra_params;
    /* State-space layers (Mamba mixers, Gu & Dao 2023): ssm_layers of the layers run a
     * mixer instead of attention (all for mamba; 7 in 8 for Jamba). Each keeps a fixed
     * per-sequence state of ssm_inner x (ssm_conv + ssm_state) values instead of a growing
     * KV cache. no_mlp: the block is norm + mixer only (Mamba). ssm_dt_norms: RMSNorms on
     * dt, B and C, with the kernels called piecewise (Jamba). */
    uint64_t ssm_layers, ssm_inner, ssm_state, ssm_conv, ssm_dt_rank;
    int ssm_conv_bias, ssm_proj_bias, ssm_dt_norms, no_mlp;
    uint64_t moe_offset;        /* MoE layers are those i >= moe_first_dense with i %
                                 * moe_every == moe_offset (default moe_every - 1) */
    int eager_only;             /* no SDPA/flash path in transformers (DeBERTa-v2's
                                 * disentangled attention): scores are materialized */
    /* Read from the checkpoint (safetensors.h), 0 when only a config was given: the exact
     * parameter count and the bytes its tensors take; quantized = the weights are stored
     * packed (GPTQ/AWQ, bitsandbytes) and load as they are. quant_bits: the config's
     * quantization_config.bits (0 = none given). */
    uint64_t ckpt_params, ckpt_weight_bytes;
    int ckpt_quantized;
    unsigned quant_bits;
    uint64_t max_positions;     /* the config's context length (max_position_embeddings,
                                 * n_positions ...; 0 = not given) */
    uint64_t image_tokens;      /* vision and diffusion models: the tokens (patches) one
                                 * sample makes, fixed by the config (0 = a text model:
                                 * the workload's --seq) */
    int vision;                 /* an image encoder (ViT, CLIP, SigLIP, DiT): no vocabulary,
                                 * no token-type buffers */
    /* A second tower trained with the first (CLIP, SigLIP: the text encoder): its
     * parameters are in extra_params; its activations count as tower2_layers layers of
     * tower2_tokens tokens of width tower2_hidden. */
    uint64_t tower2_layers, tower2_tokens, tower2_hidden;
    /* Encoder-decoders whose encoder sees a fixed length (Whisper: 1500 positions of 30 s
     * of audio); 0 = the same tokens as the decoder. */
    uint64_t encoder_tokens;
    /* diffusers UNet2DConditionModel: its parameters are extra_params; its activations
     * come from the levels: channels, transformer depth (0 = no attention), resnets a
     * level, the latent's side, the text tokens its cross-attention reads. */
    int unet;
    size_t unet_levels;
    uint64_t unet_channels[6], unet_tlayers[6], unet_resnets, latent_side, text_tokens, cross_dim;
    unsigned transformers_major;/* the config's transformers_version major (0 = not given:
                                 * read as the current 5, whose MoE experts are one module
                                 * holding every expert's weights; 4 had a module each) */
} od_model;

/* Parameter counts derived from an od_model. */
typedef struct {
    uint64_t total;             /* what sum(p.numel()) reports */
    uint64_t embedding;         /* token (+ position) tables */
    uint64_t matmul;            /* weights (and biases) consumed by linear layers,
                                 * incl. the lm_head even when tied: autocast casts these */
    uint64_t per_layer;         /* one dense or MoE layer, averaged */
    uint64_t largest_tensor;    /* elements of the largest single parameter */
    uint64_t largest_module;    /* the most parameters one module holds itself
                                 * (parameters(recurse=False)): DeepSpeed's
                                 * largest_layer_params (stage3.py model_to_params) */
    uint64_t largest_layer;     /* the largest unit accelerate's device_map keeps whole: a
                                 * decoder layer (its _no_split_modules), the embedding or
                                 * the lm_head (utils/modeling.py get_max_layer_size) */
    uint64_t layers;            /* all the layers' parameters */
    uint64_t head;              /* the rest: final norm, untied lm_head, extra parameters */
    uint64_t active;            /* parameters touched per token (MoE: top-k experts) */
    uint64_t experts;           /* routed-expert weights (3-D tensors in transformers 5,
                                 * multiplied by grouped_mm, which autocast does not cast) */
} od_param_counts;

/* Count parameters exactly as the transformers implementation lays them out. */
void od_model_count(const od_model *m, od_param_counts *out);

/* Number of MoE layers (0 for a dense model). */
uint64_t od_model_moe_layers(const od_model *m);

/* A Llama-style model from bare sizes (--params/--layers/--hidden ...). Any of
 * heads, kv_heads, intermediate, vocab may be 0 to take a conventional default
 * (heads = hidden/128, kv = heads, vocab = 32000); when params > 0 and intermediate is
 * 0 the MLP width is solved so the parameter count matches. Fails with OD_ERR_ARG on
 * impossible combinations. */
od_status od_model_from_sizes(uint64_t params, uint64_t layers, uint64_t hidden,
                              uint64_t heads, uint64_t kv_heads, uint64_t intermediate,
                              uint64_t vocab, od_model *out, od_error *err);

/* Check the invariants every estimate relies on (non-zero sizes, heads dividing,
 * nothing absurd). OD_ERR_FORMAT naming the field otherwise. */
od_status od_model_validate(const od_model *m, od_error *err);

/* Bytes the KV cache takes per token of one sequence, all attention layers (state-space
 * layers have none), at kv_bytes per element, before any sliding-window cap (MLA: the
 * compressed latent + rope key; 0 for encoders, which cache nothing). */
double od_model_kv_bytes_per_token(const od_model *m, double kv_bytes);

/* Bytes of the fixed recurrent state one sequence keeps in the state-space layers
 * (transformers' MambaCache / HybridMambaAttentionDynamicCache: conv_states of ssm_inner x
 * ssm_conv and ssm_states of ssm_inner x ssm_state per layer) at bytes per element. */
double od_model_ssm_state_bytes(const od_model *m, double bytes);

/* Token entries a T-token sequence leaves in the KV cache, summed over the layers: a
 * layer with a sliding window keeps at most the window (L x T without one). */
double od_model_kv_layer_tokens(const od_model *m, double T);

#endif
