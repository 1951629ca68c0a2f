/* plan_doc.c - the plan documents (jansson). */
#include "render/plan_doc.h"

#include <string.h>

#define I(x) ((json_int_t)(x))

json_t *od_plan_model_json(const od_model *m)
{
    json_t *j = json_pack("{ss sI sI sI sI sI sI sI sI sI}", "model_type", m->model_type, "layers",
                          I(m->layers), "hidden", I(m->hidden), "heads", I(m->heads), "kv_heads",
                          I(m->kv_heads), "head_dim", I(m->head_dim), "intermediate", I(m->intermediate),
                          "vocab", I(m->vocab), "experts", I(m->experts), "experts_per_token",
                          I(m->experts_per_token));
    if (j && m->image_tokens)
        json_object_set_new(j, "tokens_per_sample", json_integer(I(m->image_tokens)));
    return j;
}

static json_t *breakdown_json(const od_breakdown *b)
{
    return json_pack("{sI sI sI sI sI sI sI sI}", "parameters", I(b->parameters), "gradients",
                     I(b->gradients), "optimizer_states", I(b->optimizer_states), "activations",
                     I(b->activations), "logits_and_loss", I(b->logits_and_loss), "kv_cache",
                     I(b->kv_cache), "temporaries", I(b->temporaries), "workspace", I(b->workspace));
}

static const char *framework_name(const od_workload *w)
{
    return w->deepspeed ? "deepspeed" : w->megatron ? "megatron" : w->fsdp ? "fsdp" : w->ddp ? "ddp" : "torch";
}

static const char *offload_name(int o)
{
    return o == OD_OFFLOAD_NVME ? "nvme" : o ? "cpu" : "none";
}

/* The training settings beyond the step's own. */
static void train_extras(json_t *j, const od_workload *w)
{
    if (w->lora_rank) {
        char t[64];
        json_object_set_new(j, "lora_targets", json_string(od_lora_targets_text(w->lora_targets, t, sizeof t)));
        json_object_set_new(j, "base_weights", json_string(od_base_weights_name(w->base_weights)));
    }
    if (w->freeze_layers)
        json_object_set_new(j, "freeze_layers", json_integer(I(w->freeze_layers)));
    if (w->sp)
        json_object_set_new(j, "sp", json_true());
    if (w->cp > 1)
        json_object_set_new(j, "cp", json_integer(I(w->cp)));
    if (w->vpp > 1)
        json_object_set_new(j, "vpp", json_integer(I(w->vpp)));
    json_object_set_new(j, "framework", json_string(framework_name(w)));
    json_object_set_new(j, "offload_optimizer", json_string(offload_name(w->offload_optimizer)));
    if (w->main_grads)
        json_object_set_new(j, "main_grads", json_string(w->main_grads == OD_MAIN_GRADS_BF16 ? "bf16" : "fp32"));
    if (w->pp > 1) {
        json_object_set_new(j, "stage", json_string(w->stage == OD_STAGE_FIRST ? "first"
                                                    : w->stage == OD_STAGE_LAST ? "last" : "max"));
        if (w->first_stage_layers)
            json_object_set_new(j, "first_stage_layers", json_integer(I(w->first_stage_layers)));
        if (w->last_stage_layers)
            json_object_set_new(j, "last_stage_layers", json_integer(I(w->last_stage_layers)));
    }
    if (w->ep > 1 || w->etp)
        json_object_set_new(j, "expert_parallel", json_pack("{sI sI}", "ep", I(w->ep ? w->ep : 1), "etp",
                                                            I(w->etp ? w->etp : w->tp)));
    if (w->fsdp)
        json_object_set_new(j, "fsdp", json_string(od_fsdp_name(w->fsdp)));
    if (w->ddp)
        json_object_set_new(j, "gradient_as_bucket_view", json_boolean(w->ddp_bucket_view));
    if (w->deepspeed)
        json_object_set_new(j, "deepspeed",
                            json_pack("{ss sb sI sf}", "offload_params", offload_name(w->offload_params),
                                      "zero_init", w->zero_init, "nodes", I(w->nodes), "buffer_factor",
                                      w->buffer_factor > 0 ? w->buffer_factor : 1.5));
}

static json_t *workload_json(const od_workload *w)
{
    if (w->task == OD_TASK_INFER)
        return json_pack("{sI sI sI ss ss si sI sI sI}", "batch", I(w->batch), "prompt", I(w->prompt),
                         "new_tokens", I(w->new_tokens), "weights", od_weights_name(w->weights), "kv_cache",
                         od_kv_cache_name(w->kv_cache), "kv_bytes_per_element", w->kv_bytes, "paged_block",
                         I(w->paged_block), "tp", I(w->tp), "workspace_bytes", I(w->workspace_bytes));
    json_t *j = json_pack("{sI sI ss ss ss ss sI si sI sI sI sI sb sb sI}", "batch", I(w->batch), "seq",
                          I(w->seq), "precision", od_precision_name(w->precision), "optimizer",
                          od_optimizer_name(w->optimizer), "attention", od_attention_name(w->attention),
                          "checkpointing", od_ckpt_name(w->ckpt), "grad_accum", I(w->grad_accum), "zero",
                          w->zero, "dp", I(w->dp), "tp", I(w->tp), "pp", I(w->pp), "lora_rank",
                          I(w->lora_rank), "chunked_loss", w->chunked_loss, "offload",
                          w->offload_optimizer != 0, "workspace_bytes", I(w->workspace_bytes));
    if (j)
        train_extras(j, w);
    return j;
}

static json_t *target_json(const od_gpu *gpu)
{
    json_t *t = json_pack("{ss ss sI sb}", "name", gpu->name, "description", gpu->description,
                          "memory_bytes", I(gpu->memory_bytes), "unified_memory", gpu->unified);
    if (t && gpu->unified) {
        json_object_set_new(t, "ram_bytes", json_integer(I(gpu->ram_bytes)));
        json_object_set_new(t, "note", json_string(od_gpu_unified_note()));
    }
    return t;
}

static json_t *assumptions_json(const od_estimate *e)
{
    json_t *as = json_array();
    for (size_t i = 0; as && i < e->n_assumptions; i++)
        json_array_append_new(as, json_pack("{ss ss}", "assumption", e->assumptions[i].text, "source",
                                            e->assumptions[i].source));
    return as;
}

static json_t *mitigation_json(const od_mitigation *x)
{
    return json_pack("{ss ss ss sf ss ss ss ss sI sI sI sI sb}", "key", x->key, "change", x->title,
                     "flags", x->flags, "compute_overhead_pct", x->overhead_pct, "compute_overhead",
                     x->overhead, "accuracy_risk", x->accuracy_risk, "needs", x->needs, "communication",
                     x->communication, "peak_allocated_bytes", I(x->peak_allocated_bytes),
                     "device_memory_bytes", I(x->device_memory_bytes), "gpus", I(x->gpus), "parts",
                     I(x->parts), "fits", x->fits);
}

/* The estimate's own figures. */
static void estimate_json(json_t *doc, const od_workload *w, const od_estimate *e)
{
    json_object_set_new(doc, "model_states_bytes", json_integer(I(e->model_states_bytes)));
    json_object_set_new(doc, "kv_cache_bytes_per_token", json_integer(I(e->kv_cache_bytes_per_token)));
    json_object_set_new(doc, "host_bytes", json_integer(I(e->host_bytes)));
    if (e->nvme_bytes)
        json_object_set_new(doc, "nvme_bytes", json_integer(I(e->nvme_bytes)));
    json_object_set_new(doc, "largest_layer_bytes", json_integer(I(e->largest_layer_bytes)));
    json_object_set_new(doc, "largest_module_params", json_integer(I(e->largest_module_params)));
    if (w->task == OD_TASK_TRAIN && w->pp > 1)
        json_object_set_new(doc, "pipeline_stage",
                            json_pack("{ss sI sI}", "stage", e->stage_name, "layers", I(e->stage_layers),
                                      "params_per_gpu", I(e->stage_params)));
    json_object_set_new(doc, "attention_kernel", json_string(e->attention_kernel));
    json_object_set_new(doc, "peak_phase", json_string(e->peak_phase));
    if (e->ssm_state_bytes_per_sequence)
        json_object_set_new(doc, "ssm_state_bytes_per_sequence", json_integer(I(e->ssm_state_bytes_per_sequence)));
    if (e->moe_decode_copy_bytes_per_token)
        json_object_set_new(doc, "moe_decode_copy_bytes_per_token",
                            json_integer(I(e->moe_decode_copy_bytes_per_token)));
    if (w->task == OD_TASK_TRAIN)
        json_object_set_new(doc, "per_layer_activation_bytes",
                            e->per_layer_activation_bytes ? json_integer(I(e->per_layer_activation_bytes))
                                                          : json_null());
    json_object_set_new(doc, "breakdown_bytes", breakdown_json(&e->at_peak));
    json_object_set_new(doc, "peak_allocated_bytes", json_integer(I(e->peak_allocated_bytes)));
    json_object_set_new(doc, "phases", json_pack("{sI sI sI}", "forward_peak_bytes", I(e->forward_peak_bytes),
                                                 "backward_peak_bytes", I(e->backward_peak_bytes),
                                                 "optimizer_peak_bytes", I(e->optimizer_peak_bytes)));
    if (w->task == OD_TASK_TRAIN)
        json_object_set_new(doc, "first_step_peak_bytes", json_integer(I(e->first_step_peak_bytes)));
    json_object_set_new(doc, "peak_reserved_bytes", json_integer(I(e->peak_reserved_bytes)));
}

json_t *od_plan_document(const od_model *m, const od_workload *w, const od_gpu *gpu,
                         const od_plan *p, const od_safetensors_totals *ck, uint64_t config_params)
{
    const od_estimate *e = &p->estimate;
    json_t *doc = json_object();
    if (!doc)
        return NULL;
    json_object_set_new(doc, "schema_version", json_integer(1));
    json_object_set_new(doc, "task", json_string(w->task == OD_TASK_TRAIN ? "train" : "infer"));
    json_object_set_new(doc, "model", od_plan_model_json(m));
    json_object_set_new(doc, "workload", workload_json(w));
    json_object_set_new(doc, "params", json_integer(I(e->params)));
    if (ck)
        json_object_set_new(doc, "checkpoint",
                            json_pack("{sI sI sI sI sI sI ss* ss* sI}", "safetensors_files", I(ck->files), "tensors",
                                      I(ck->tensors), "params", I(ck->params), "weight_bytes",
                                      I(ck->weight_bytes), "quantization_metadata_bytes", I(ck->quant_meta_bytes),
                                      "packed_params", I(ck->packed_params), "quantization",
                                      ck->quant[0] ? ck->quant : NULL, "format",
                                      ck->format[0] ? ck->format : NULL, "config_params", I(config_params)));
    estimate_json(doc, w, e);
    json_object_set_new(doc, "cuda_context_bytes", json_integer(I(p->cuda_context_bytes)));
    json_object_set_new(doc, "device_memory_bytes", json_integer(I(p->device_memory_bytes)));
    json_object_set_new(doc, "target", target_json(gpu));
    json_object_set_new(doc, "assumptions", assumptions_json(e));
    json_object_set_new(doc, "fits", json_boolean(p->fits));
    json_object_set_new(doc, "max_batch", json_integer(I(p->max_batch)));
    json_t *ms = json_array();
    for (size_t i = 0; ms && i < p->n_mitigations; i++)
        json_array_append_new(ms, mitigation_json(&p->mitigations[i]));
    json_object_set_new(doc, "mitigations", ms);
    const od_mitigation *cl = &p->closest;
    json_object_set_new(doc, "does_not_fit_even_with",
                        p->has_closest ? json_pack("{ss ss ss sI sI}", "key", cl->key, "change", cl->title,
                                                   "flags", cl->flags, "peak_allocated_bytes",
                                                   I(cl->peak_allocated_bytes), "device_memory_bytes",
                                                   I(cl->device_memory_bytes))
                                       : json_null());
    return doc;
}

/* The vLLM assumptions, with their sources. */
static json_t *vllm_assumptions(const od_model *m, const od_vllm_config *c, const od_vllm_plan *v)
{
    json_t *as = json_array();
    struct row { const char *a, *s; } rows[8];
    size_t n = 0;
    rows[n++] = (struct row){
        c->kv_cache_memory_bytes
            ? "KV cache = --kv-cache-memory exactly (kv_cache_memory_bytes: no profiling budget); blocks = "
              "that / (page bytes x layers per KV-cache group)"
            : "KV cache = gpu_memory_utilization x total - weights - the profiling forward's peak - memory "
              "outside PyTorch; blocks = that / (page bytes x layers per KV-cache group)",
        "vLLM v1/worker/gpu_worker.py determine_available_memory @ 35d5cda; v1/core/kv_cache_utils.py "
        "get_num_blocks @ 001cabc"};
    rows[n++] = (struct row){
        "the profiling forward runs max_num_batched_tokens tokens (V1 default by GPU and entry point: 8192 / "
        "16384 on >= 70 GiB GPUs other than A100, else 2048 / 8192) and fp32 logits for min(max_num_seqs, "
        "max_num_batched_tokens) sequences",
        "vLLM engine/arg_utils.py get_batch_defaults @ 99d7eb5; gpu_model_runner profile_run"};
    rows[n++] = (struct row){
        m->kv_lora_rank ? "MLA: one latent (kv_lora_rank + qk_rope_head_dim) per token and layer, whole on "
                          "every tensor-parallel rank"
                        : "page = 2 x max(1, kv heads / tp) x head_dim x dtype x block_size: tp beyond the KV "
                          "heads copies them",
        "vLLM config/model.py get_num_kv_heads; v1/kv_cache_interface.py AttentionSpec / MLAAttentionSpec "
        "real_page_size_bytes @ 001cabc"};
    if (m->sliding_window || m->attention_chunk)
        rows[n++] = (struct row){
            "a request holds cdiv(min(window - 1 + max_num_batched_tokens, max_model_len), block) + 1 blocks in "
            "a sliding-window layer (chunked local: cdiv(min(chunk + max_num_batched_tokens, max_model_len), "
            "block)); layers of several kinds form KV-cache groups of the fewest kind's count",
            "vLLM v1/kv_cache_interface.py SlidingWindowSpec / ChunkedLocalAttentionSpec max_memory_usage_bytes; "
            "kv_cache_utils.py _get_kv_cache_groups_uniform_page_size @ 001cabc"};
    if (c->pp > 1)
        rows[n++] = (struct row){
            "pipeline stages hold L/pp layers, the remainder on the stages before the last; the first holds the "
            "embedding, the last the norm, lm_head and sampler; the blocks are the fewest any stage has",
            "vLLM distributed/utils.py get_pp_indices @ 5a6541d"};
    rows[n++] = (struct row){
        c->enforce_eager ? "--enforce-eager: no CUDA graphs"
                         : "CUDA graphs are captured after the KV cache, outside the budget: their pool is "
                           "estimated as a forward of the largest capture size, min(2 x max_num_seqs, 512) "
                           "tokens (vLLM measures and logs it; not checked against a measured run)",
        "vLLM v1/worker/gpu_worker.py compile_or_warm_up_model (capture_model) @ 35d5cda"};
    (void)v;
    for (size_t i = 0; as && i < n; i++)
        json_array_append_new(as, json_pack("{ss ss}", "assumption", rows[i].a, "source", rows[i].s));
    return as;
}

json_t *od_vllm_document(const od_model *m, const od_workload *w, const od_gpu *gpu,
                         const od_vllm_config *c, const od_vllm_plan *v)
{
    json_t *doc = json_object();
    if (!doc)
        return NULL;
    json_object_set_new(doc, "schema_version", json_integer(1));
    json_object_set_new(doc, "task", json_string("serve"));
    json_object_set_new(doc, "engine", json_string("vllm"));
    json_object_set_new(doc, "model",
                        json_pack("{ss sI sI sI sI sI}", "model_type", m->model_type, "layers", I(m->layers),
                                  "hidden", I(m->hidden), "heads", I(m->heads), "kv_heads", I(m->kv_heads),
                                  "vocab", I(m->vocab)));
    json_object_set_new(doc, "config",
                        json_pack("{sf sI sI sI sI ss ss si sI sI sb sI sb}", "gpu_memory_utilization",
                                  c->gpu_memory_utilization, "max_model_len", I(c->max_model_len), "block_size",
                                  I(c->block_size), "max_num_seqs", I(v->max_num_seqs), "max_num_batched_tokens",
                                  I(v->max_num_batched_tokens), "entrypoint",
                                  c->entry == OD_VLLM_LLM ? "llm" : "serve", "weights",
                                  m->ckpt_quantized ? "checkpoint" : od_weights_name(w->weights),
                                  "kv_bytes_per_element", w->kv_bytes, "tp", I(w->tp), "pp",
                                  I(c->pp ? c->pp : 1), "enforce_eager", c->enforce_eager,
                                  "kv_cache_memory_bytes", I(c->kv_cache_memory_bytes),
                                  "disable_hybrid_kv_cache_manager", c->disable_hybrid));
    json_object_set_new(doc, "target", json_pack("{ss sI}", "name", gpu->name, "memory_bytes", I(gpu->memory_bytes)));
    json_object_set_new(doc, "budget_bytes", json_integer(I(v->budget_bytes)));
    json_object_set_new(doc, "weights_bytes", json_integer(I(v->weights_bytes)));
    if (v->quantized_params)
        json_object_set_new(doc, "quantized_params", json_integer(I(v->quantized_params)));
    json_object_set_new(doc, "activation_bytes", json_integer(I(v->activation_bytes)));
    json_object_set_new(doc, "non_torch_bytes", json_integer(I(v->non_torch_bytes)));
    json_object_set_new(doc, "cuda_graph_bytes", json_integer(I(v->cuda_graph_bytes)));
    json_object_set_new(doc, "kv_cache_bytes", json_integer(I(v->kv_cache_bytes)));
    json_object_set_new(doc, "device_bytes", json_integer(I(v->device_bytes)));
    json_object_set_new(doc, "kv_heads_per_gpu", json_integer(I(v->kv_heads_per_gpu)));
    json_object_set_new(doc, "kv_heads_replicated", json_boolean(v->kv_replicated));
    json_object_set_new(doc, "stage_layers", json_integer(I(v->stage_layers)));
    json_object_set_new(doc, "page_bytes", json_integer(I(v->page_bytes)));
    json_object_set_new(doc, "block_bytes", json_integer(I(v->block_bytes)));
    json_object_set_new(doc, "kv_cache_groups", json_pack("{sI sI}", "count", I(v->n_groups), "layers_each",
                                                          I(v->group_size)));
    json_object_set_new(doc, "num_blocks", json_integer(I(v->num_blocks)));
    json_object_set_new(doc, "blocks_per_seq", json_integer(I(v->blocks_per_seq)));
    json_object_set_new(doc, "max_concurrent_seqs", json_integer(I(v->max_concurrent_seqs)));
    json_object_set_new(doc, "max_concurrency", json_real(v->max_concurrency));
    if (v->hybrid)
        json_object_set_new(doc, c->disable_hybrid ? "with_hybrid_kv_cache_manager" : "without_hybrid_kv_cache_manager",
                            json_pack("{sI sI sf}", "num_blocks", I(v->alt_num_blocks), "blocks_per_seq",
                                      I(v->alt_blocks_per_seq), "max_concurrency", v->alt_max_concurrency));
    json_object_set_new(doc, "fits", json_boolean(v->fits));
    json_object_set_new(doc, "assumptions", vllm_assumptions(m, c, v));
    return doc;
}

/* One table row's figures. */
static json_t *row_json(const char *const *axes, size_t n_axes, const od_plan_row *r)
{
    json_t *j = json_object();
    if (!j)
        return NULL;
    for (size_t a = 0; a < n_axes; a++)
        json_object_set_new(j, axes[a], json_string(r->value[a]));
    if (r->vllm) {
        const od_vllm_plan *v = r->vllm;
        json_object_set_new(j, "weights_bytes", json_integer(I(v->weights_bytes)));
        json_object_set_new(j, "kv_cache_bytes", json_integer(I(v->kv_cache_bytes)));
        json_object_set_new(j, "num_blocks", json_integer(I(v->num_blocks)));
        json_object_set_new(j, "max_concurrency", json_real(v->max_concurrency));
        json_object_set_new(j, "fits", json_boolean(v->fits));
        return j;
    }
    const od_plan *p = r->plan;
    const od_estimate *e = &p->estimate;
    json_object_set_new(j, "largest_layer_bytes", json_integer(I(e->largest_layer_bytes)));
    json_object_set_new(j, "model_states_bytes", json_integer(I(e->model_states_bytes)));
    json_object_set_new(j, "host_bytes", json_integer(I(e->host_bytes)));
    if (e->nvme_bytes)
        json_object_set_new(j, "nvme_bytes", json_integer(I(e->nvme_bytes)));
    json_object_set_new(j, "peak_allocated_bytes", json_integer(I(e->peak_allocated_bytes)));
    json_object_set_new(j, "device_memory_bytes", json_integer(I(p->device_memory_bytes)));
    json_object_set_new(j, "target_memory_bytes", json_integer(I(p->target_bytes)));
    json_object_set_new(j, "fits", json_boolean(p->fits));
    json_object_set_new(j, "max_batch", json_integer(I(p->max_batch)));
    return j;
}

json_t *od_plan_table_document(const od_model *m, const char *const *axes, size_t n_axes,
                               const od_plan_row *rows, size_t n_rows)
{
    json_t *doc = json_object();
    if (!doc)
        return NULL;
    json_object_set_new(doc, "schema_version", json_integer(1));
    int vllm = n_rows && rows[0].vllm;
    json_object_set_new(doc, "task", json_string(vllm ? "serve" : n_rows && rows[0].workload.task == OD_TASK_INFER
                                                                      ? "infer" : "train"));
    json_object_set_new(doc, "model", od_plan_model_json(m));
    json_t *ax = json_array();
    for (size_t a = 0; ax && a < n_axes; a++)
        json_array_append_new(ax, json_string(axes[a]));
    json_object_set_new(doc, "columns", ax);
    json_t *rs = json_array();
    for (size_t i = 0; rs && i < n_rows; i++)
        json_array_append_new(rs, row_json(axes, n_axes, &rows[i]));
    json_object_set_new(doc, "rows", rs);
    if (n_rows && !vllm)
        json_object_set_new(doc, "assumptions", assumptions_json(&rows[0].plan->estimate));
    return doc;
}
