/* test_plan.c - the estimator's mechanics beyond the measured runs (KV cache sizes,
 * sharding, optimizer state) against independent arithmetic, and the planner's max-batch
 * search and mitigations. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "model/plan.h"
#include "read/hfconfig.h"

static void load(const char *path, od_model *m)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char buf[8192];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    od_error err;
    assert_int_equal(od_hfconfig_parse(buf, n, m, &err), OD_OK);
}

static od_estimate est(const od_model *m, const od_workload *w)
{
    od_estimate e;
    od_error err;
    assert_int_equal(od_estimate_compute(m, w, &e, &err), OD_OK);
    return e;
}

/* Llama-2-7B's KV cache is 2 (K,V) x 32 layers x 4096 x 2 bytes = 512 KiB per token. */
static void test_kv_cache(void **state)
{
    (void)state;
    od_model m;
    load("tests/data/configs/llama-2-7b.json", &m);
    od_workload w;
    od_workload_defaults(&w);
    w.task = OD_TASK_INFER;
    w.batch = 4;
    w.prompt = 1000;
    w.new_tokens = 1;      /* prefill only: the cache holds the prompt */
    w.kv_cache = OD_KV_DYNAMIC;
    od_estimate e = est(&m, &w);
    assert_int_equal(e.at_peak.kv_cache, 4ULL * 1000 * 524288);
    assert_int_equal(e.at_peak.parameters, 2ULL * 6738415616ULL);
    /* paged blocks of 16 round 1000 + 1 tokens up to 1008 */
    w.kv_cache = OD_KV_PAGED;
    w.paged_block = 16;
    e = est(&m, &w);
    assert_int_equal(e.at_peak.kv_cache, 4ULL * 1008 * 524288);
    /* an fp8 cache halves it */
    w.kv_bytes = 1;
    e = est(&m, &w);
    assert_int_equal(e.at_peak.kv_cache, 4ULL * 1008 * 262144);
    /* int4 weights: fewer than a third of the bf16 bytes */
    w.weights = OD_W_INT4;
    od_estimate q = est(&m, &w);
    assert_true(q.at_peak.parameters * 3 < 2ULL * 6738415616ULL);
}

/* AdamW states: 2 x 4 bytes per parameter under autocast; ZeRO-1 over 4 GPUs shards
 * them to a quarter; fused AdamW drops the foreach temporary (one fp32 copy). */
static void test_optimizer_and_zero(void **state)
{
    (void)state;
    od_model m;
    load("tests/data/configs/mistral-7b-v0.1.json", &m);
    od_workload w;
    od_workload_defaults(&w);
    w.batch = 1;
    w.seq = 512;
    od_estimate e = est(&m, &w);
    uint64_t P = 7241732096ULL;
    assert_int_equal(e.optimizer_peak_bytes, 2 * w.workspace_bytes + 4 * P + 8 * P + 4 * P + 4 * P);
    w.optimizer = OD_OPT_ADAMW_FUSED;
    e = est(&m, &w);
    assert_int_equal(e.optimizer_peak_bytes, 2 * w.workspace_bytes + 4 * P + 8 * P + 4 * P);
    w.zero = 1;
    w.dp = 4;
    e = est(&m, &w);
    assert_int_equal(e.optimizer_peak_bytes, 2 * w.workspace_bytes + 4 * P + 2 * P + 4 * P);
    w.zero = 2;
    e = est(&m, &w);
    assert_int_equal(e.optimizer_peak_bytes, 2 * w.workspace_bytes + 4 * P + 2 * P + 1 * P);
}

/* Activations scale with tokens; checkpointing, SDPA and chunked loss all lower the peak;
 * eager attention's seq^2 term grows 4x when the sequence doubles at equal tokens. */
static void test_directions(void **state)
{
    (void)state;
    od_model m;
    load("examples/configs/gpt2-124m.json", &m);
    od_workload w;
    od_workload_defaults(&w);
    w.batch = 8;
    w.seq = 1024;
    od_estimate a = est(&m, &w);
    w.batch = 16;
    od_estimate b = est(&m, &w);
    assert_true(b.at_peak.activations > a.at_peak.activations * 19 / 10);
    w.batch = 8;
    w.ckpt = OD_CKPT_FULL;
    /* measured: 12721 MiB -> 6638 MiB */
    assert_true(est(&m, &w).peak_allocated_bytes < a.peak_allocated_bytes * 6 / 10);
    w.ckpt = OD_CKPT_NONE;
    w.chunked_loss = 1;
    assert_true(est(&m, &w).peak_allocated_bytes < a.peak_allocated_bytes);
    w.chunked_loss = 0;
    w.attention = OD_ATTN_EAGER;
    od_estimate e1 = est(&m, &w);
    w.batch = 4;
    w.seq = 2048;
    od_estimate e2 = est(&m, &w);
    assert_true(e2.at_peak.activations > e1.at_peak.activations);
    assert_string_equal(e1.attention_kernel, "eager");
}

static void test_max_batch(void **state)
{
    (void)state;
    od_model m;
    load("examples/configs/llama-160m.json", &m);
    od_gpu g;
    od_error err;
    assert_int_equal(od_gpu_lookup("rtx4090", &g, &err), OD_OK);
    od_workload w;
    od_workload_defaults(&w);
    w.workspace_bytes = g.workspace_bytes;
    w.seq = 2048;
    od_plan *p = malloc(sizeof *p);
    assert_non_null(p);
    assert_int_equal(od_plan_compute(&m, &w, &g, p, &err), OD_OK);
    assert_true(p->max_batch >= 1);
    uint64_t dev;
    int fits;
    w.batch = p->max_batch;
    assert_int_equal(od_plan_fits(&m, &w, &g, &dev, &fits, &err), OD_OK);
    assert_true(fits);
    w.batch = p->max_batch + 1;
    assert_int_equal(od_plan_fits(&m, &w, &g, &dev, &fits, &err), OD_OK);
    assert_false(fits);
    /* too big a batch: only recipes that fit are listed, those on the GPUs it has (one)
     * first, then by compute overhead, each lowering the peak and minimal: no part of it
     * can be dropped */
    w.batch = p->max_batch * 4;
    assert_int_equal(od_plan_compute(&m, &w, &g, p, &err), OD_OK);
    assert_false(p->fits);
    assert_true(p->n_mitigations >= 1);
    assert_false(p->has_closest);
    for (size_t i = 0; i < p->n_mitigations; i++) {
        assert_true(p->mitigations[i].fits);
        assert_true(p->mitigations[i].peak_allocated_bytes < p->estimate.peak_allocated_bytes);
        if (i && p->mitigations[i].more_gpus == p->mitigations[i - 1].more_gpus)
            assert_true(p->mitigations[i].overhead_pct >= p->mitigations[i - 1].overhead_pct);
        if (i)
            assert_true(!p->mitigations[i - 1].more_gpus || p->mitigations[i].more_gpus);
        od_workload t = p->mitigations[i].workload;
        uint64_t d;
        int f;
        assert_int_equal(od_plan_fits(&m, &t, &g, &d, &f, &err), OD_OK);
        assert_true(f);
    }
    /* the cheapest is one GPU's: micro-batches with accumulation */
    assert_int_equal(p->mitigations[0].more_gpus, 0);
    /* hopeless (GPT-2 on a 2^20-token sequence on a T4): nothing listed; the nearest
     * combination of everything that helps is kept once */
    load("examples/configs/gpt2-124m.json", &m);
    assert_int_equal(od_gpu_lookup("t4", &g, &err), OD_OK);
    w.workspace_bytes = g.workspace_bytes;
    w.batch = 1;
    w.seq = 1 << 20;
    assert_int_equal(od_plan_compute(&m, &w, &g, p, &err), OD_OK);
    assert_true(p->closest.parts >= 2);
    assert_non_null(strstr(p->closest.key, "full-checkpointing"));
    assert_int_equal(p->n_mitigations, 0);
    assert_true(p->has_closest);
    assert_false(p->closest.fits);
    assert_true(p->closest.peak_allocated_bytes < p->estimate.peak_allocated_bytes);
    free(p);
}

/* LoRA's optimizer state is a sliver of the peak: no optimizer sharding, 8-bit states or
 * offload is offered for it. */
static void test_lora_no_optimizer_changes(void **state)
{
    (void)state;
    od_model m;
    load("tests/data/configs/llama-2-7b.json", &m);
    od_gpu g;
    od_error err;
    assert_int_equal(od_gpu_lookup("a10g", &g, &err), OD_OK);
    od_workload w;
    od_workload_defaults(&w);
    w.workspace_bytes = g.workspace_bytes;
    w.precision = OD_PREC_BF16;
    w.lora_rank = 16;
    w.batch = 8;
    w.seq = 2048;
    od_plan *p = malloc(sizeof *p);
    assert_non_null(p);
    assert_int_equal(od_plan_compute(&m, &w, &g, p, &err), OD_OK);
    assert_true(p->estimate.at_peak.optimizer_states * 20 < p->estimate.peak_allocated_bytes);
    assert_true(p->n_mitigations > 0 || p->has_closest);
    for (size_t i = 0; i < p->n_mitigations; i++) {
        const char *k = p->mitigations[i].key;
        assert_true(!strstr(k, "zero1") && !strstr(k, "zero2") && !strstr(k, "adam8bit") &&
                    !strstr(k, "offload-optimizer"));
    }
    /* full fine-tuning keeps them: Llama-2-7B under AdamW does not fit one A100-80 */
    w.lora_rank = 0;
    w.batch = 1;
    w.seq = 512;
    w.precision = OD_PREC_AMP_BF16;
    assert_int_equal(od_gpu_lookup("a100-80", &g, &err), OD_OK);
    assert_int_equal(od_plan_compute(&m, &w, &g, p, &err), OD_OK);
    assert_false(p->fits);
    int zero1 = 0, adam8 = 0, offload = 0;
    for (size_t i = 0; i < p->n_mitigations; i++) {
        zero1 |= strstr(p->mitigations[i].key, "zero1") != NULL;
        adam8 |= strstr(p->mitigations[i].key, "adam8bit") != NULL;
        offload |= strstr(p->mitigations[i].key, "offload-optimizer") != NULL;
    }
    assert_true(zero1 && adam8 && offload);
    free(p);
}

static void test_gpus(void **state)
{
    (void)state;
    od_gpu g;
    od_error err;
    assert_int_equal(od_gpu_lookup("H200", &g, &err), OD_OK);
    assert_int_equal(g.memory_bytes, 150109880320ULL); /* measured total */
    assert_int_equal(od_gpu_lookup("a100", &g, &err), OD_OK);
    assert_string_equal(g.name, "a100-80");
    assert_int_equal(od_gpu_lookup("m2-max-96", &g, &err), OD_OK);
    assert_true(g.unified);
    assert_int_equal(g.memory_bytes, 72000000000ULL); /* 3/4 of 96 GB */
    assert_int_equal(od_gpu_lookup("m1-16", &g, &err), OD_OK);
    assert_true(g.memory_bytes < 11000000000ULL);
    assert_int_equal(od_gpu_lookup("tpu-v5", &g, &err), OD_ERR_ARG);
    /* the names nvidia-smi and torch.cuda.get_device_name() print */
    static const struct { const char *smi, *key; } smi[] = {
        {"NVIDIA H200", "h200"}, {"NVIDIA A100-SXM4-80GB", "a100-80"}, {"Tesla T4", "t4"},
        {"NVIDIA GeForce RTX 4090", "rtx4090"}, {"NVIDIA H100 80GB HBM3", "h100-sxm"},
        {"NVIDIA H100 PCIe", "h100-pcie"}, {"NVIDIA H100 NVL", "h100-nvl"},
        {"Tesla V100-SXM2-16GB", "v100-16"}, {"NVIDIA A10G", "a10g"}, {"NVIDIA L40S", "l40s"},
        {"NVIDIA RTX A6000", "a6000"}, {"NVIDIA B200", "b200"}, {"AMD Instinct MI300X", "mi300x"},
        {"AMD Instinct MI250X/MI250", "mi250x"}, {"h100-80", "h100-sxm"}, {"A100_40", "a100-40"},
    };
    for (size_t i = 0; i < sizeof smi / sizeof smi[0]; i++) {
        assert_int_equal(od_gpu_lookup(smi[i].smi, &g, &err), OD_OK);
        assert_string_equal(g.name, smi[i].key);
    }
    /* no bf16 before Ampere */
    assert_int_equal(od_gpu_lookup("t4", &g, &err), OD_OK);
    assert_false(g.bf16);
    /* an unknown name lists the nearest keys */
    assert_int_equal(od_gpu_lookup("h100-sxn", &g, &err), OD_ERR_ARG);
    assert_non_null(strstr(err.msg, "nearest: h100-sxm"));
    assert_int_equal(od_gpu_lookup("mi300", &g, &err), OD_ERR_ARG);
    assert_non_null(strstr(err.msg, "nearest: mi300x"));
}

static void test_bad_workloads(void **state)
{
    (void)state;
    od_model m;
    load("examples/configs/llama-160m.json", &m);
    od_workload w;
    od_workload_defaults(&w);
    od_estimate e;
    od_error err;
    w.batch = 0;
    assert_int_equal(od_estimate_compute(&m, &w, &e, &err), OD_ERR_ARG);
    w.batch = 1;
    w.tp = 3; /* 16 heads, 4 KV heads */
    assert_int_equal(od_estimate_compute(&m, &w, &e, &err), OD_ERR_ARG);
    w.tp = 1;
    w.pp = 13;
    assert_int_equal(od_estimate_compute(&m, &w, &e, &err), OD_ERR_ARG);
}

/* The table in memory order, every entry once (the largest-device advice walks it). */
static void gpus_by_memory(void **state)
{
    (void)state;
    size_t n = 0;
    for (const od_gpu *g = od_gpu_by_memory(0), *prev = NULL; g; prev = g, g = od_gpu_by_memory(++n)) {
        if (prev)
            assert_true(prev->memory_bytes <= g->memory_bytes);
        od_gpu same;
        od_error err;
        assert_int_equal(od_gpu_lookup(g->name, &same, &err), OD_OK);
        assert_int_equal(same.memory_bytes, g->memory_bytes);
    }
    /* t4, v100-16, a10g, l4, rtx4090, rtx3090, v100-32, a100-40, l40s, a6000, mi250x,
     * h100-sxm, h100-pcie, a100-80, h100-nvl, h200, b200, mi300x */
    assert_int_equal(n, 18);
    assert_string_equal(od_gpu_by_memory(0)->name, "t4");
    assert_string_equal(od_gpu_by_memory(17)->name, "mi300x");
}


/* OPT-13B (a real config): 2 x 40 layers x 5120 x 2 bytes = 800 KB of KV cache per token,
 * 1.6 GB for one 2048-token request (the PagedAttention paper's figures). */
static void test_opt_kv_evidence(void **state)
{
    (void)state;
    od_model m;
    load("examples/configs/opt-13b.json", &m);
    od_workload w;
    od_workload_defaults(&w);
    w.task = OD_TASK_INFER;
    w.batch = 1;
    w.prompt = 2048;
    w.new_tokens = 1;
    w.kv_cache = OD_KV_DYNAMIC;
    od_estimate e = est(&m, &w);
    assert_int_equal(e.kv_cache_bytes_per_token, 819200);
    assert_int_equal(e.at_peak.kv_cache, 2048ULL * 819200); /* 1.68e9 B = 1.56 GiB */
    assert_int_equal(e.model_states_bytes, 2ULL * 12853473280ULL);
}

/* bert-base-cased (a real config) as accelerate's estimate-memory reports it: fp32
 * weights 413.18 MB (its MB = MiB: parameters plus the two int64 position/token-type
 * buffers), training with Adam 1.61 GB (16 bytes per parameter). */
static void test_bert_evidence(void **state)
{
    (void)state;
    od_model m;
    load("examples/configs/bert-base-cased.json", &m);
    od_workload w;
    od_workload_defaults(&w);
    w.task = OD_TASK_INFER;
    w.weights = OD_W_FP32;
    w.batch = 1;
    w.prompt = 512;
    od_estimate e = est(&m, &w);
    assert_int_equal(e.at_peak.parameters, 4ULL * 108310272 + 2 * 8 * 512);
    assert_int_equal((uint64_t)(e.at_peak.parameters / 1048576.0 * 100 + 0.5), 41318);
    assert_int_equal(e.at_peak.kv_cache, 0);
    assert_int_equal(e.kv_cache_bytes_per_token, 0);
    assert_string_equal(e.peak_phase, "forward");
    od_workload t;
    od_workload_defaults(&t);
    t.precision = OD_PREC_FP32;
    t.seq = 512;
    e = est(&m, &t);
    assert_int_equal(e.model_states_bytes, 16ULL * 108310272 + 2 * 8 * 512);
    assert_int_equal((uint64_t)(e.model_states_bytes / 1073741824.0 * 100 + 0.5), 161);
    assert_true(e.peak_allocated_bytes > e.model_states_bytes);
}

/* Sliding windows cap the cache: Mistral-7B-v0.1 keeps 4096 tokens in every layer;
 * Gemma 2 in its 21 local layers only; MLA caches the 576-wide latent. */
static void test_kv_caps(void **state)
{
    (void)state;
    od_model m;
    load("tests/data/configs/mistral-7b-v0.1.json", &m);
    od_workload w;
    od_workload_defaults(&w);
    w.task = OD_TASK_INFER;
    w.batch = 2;
    w.prompt = 8000;
    w.new_tokens = 1;
    w.kv_cache = OD_KV_DYNAMIC;
    od_estimate e = est(&m, &w);
    assert_int_equal(e.kv_cache_bytes_per_token, 131072);
    assert_int_equal(e.at_peak.kv_cache, 2ULL * 4096 * 131072);
    load("examples/configs/gemma-2-9b.json", &m);
    e = est(&m, &w);
    assert_int_equal(e.kv_cache_bytes_per_token, 42ULL * 8192);
    assert_int_equal(e.at_peak.kv_cache, 2ULL * 8192 * (21 * 4096 + 21 * 8000));
    const char *ds = "{\"model_type\": \"deepseek_v2\", \"hidden_size\": 2048, "
                     "\"num_hidden_layers\": 27, \"num_attention_heads\": 16, \"kv_lora_rank\": 512, "
                     "\"qk_nope_head_dim\": 128, \"qk_rope_head_dim\": 64, \"v_head_dim\": 128, "
                     "\"intermediate_size\": 10944, \"moe_intermediate_size\": 1408, "
                     "\"n_routed_experts\": 64, \"n_shared_experts\": 2, \"num_experts_per_tok\": 6, "
                     "\"first_k_dense_replace\": 1, \"vocab_size\": 102400}";
    od_error err;
    assert_int_equal(od_hfconfig_parse(ds, strlen(ds), &m, &err), OD_OK);
    e = est(&m, &w);
    assert_int_equal(e.kv_cache_bytes_per_token, 27ULL * (512 + 64) * 2);
    assert_int_equal(e.at_peak.kv_cache, 2ULL * 8000 * 27 * 576 * 2);
}


/* DeepSpeed's own estimators run on t5-3b (2,851,598,336 parameters, largest module the
 * shared 32128 x 1024 embedding, 32,899,072) on 1 node x 8 GPUs, the buffer factor 1.5:
 * estimate_zero2_model_states_mem_needs in deepspeedai/DeepSpeed
 * deepspeed/runtime/zero/stage_1_and_2.py @ 02aa38c3a55174c87b33c4ad17a304389d037443 and
 * estimate_zero3_model_states_mem_needs in deepspeed/runtime/zero/stage3.py @
 * 007cca6a2ffe3ed9d393459f4a3081bd54341ba6 print these bytes (cpu_mem, gpu_mem); plan
 * gives the same to the byte. ZeRO-2 without offload is the code's 2P + 18P/N (11.29 GiB):
 * docs/memory.rst's table still prints 15.93 GiB, its 4P + 16P/N from before PR #5099. */
static void test_deepspeed_t5(void **state)
{
    (void)state;
    od_model m;
    load("examples/configs/t5-3b.json", &m);
    od_param_counts pc;
    od_model_count(&m, &pc);
    assert_int_equal(pc.total, 2851598336ULL);
    assert_int_equal(pc.largest_module, 32899072ULL);
    static const struct {
        int zero, off_opt, off_params, zero_init;
        uint64_t gpu, cpu;
    } rows[] = {
        {2, 0, 0, 0, 12119292928ULL, 136876720128ULL}, {2, 1, 0, 0, 5703196672ULL, 136876720128ULL},
        {3, 0, 0, 1, 6547692544ULL, 1579155456ULL},    {3, 1, 0, 1, 844495872ULL, 68438360064ULL},
        {3, 1, 1, 1, 131596288ULL, 76993155072ULL},    {3, 0, 0, 0, 6547692544ULL, 136876720128ULL},
        {3, 1, 0, 0, 844495872ULL, 136876720128ULL},   {3, 1, 1, 0, 131596288ULL, 136876720128ULL},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        od_workload w;
        od_workload_defaults(&w);
        w.seq = 512;
        w.deepspeed = 1;
        w.dp = 8;
        w.zero = rows[i].zero;
        w.offload_optimizer = rows[i].off_opt;
        w.offload_params = rows[i].off_params;
        w.zero_init = rows[i].zero_init;
        od_estimate e = est(&m, &w);
        print_message("  t5-3b ZeRO-%d offload_optimizer=%d offload_param=%d zero_init=%d: per GPU %llu "
                      "(DeepSpeed %llu), per CPU %llu (%llu)\n", rows[i].zero, rows[i].off_opt,
                      rows[i].off_params, rows[i].zero_init, (unsigned long long)e.model_states_bytes,
                      (unsigned long long)rows[i].gpu, (unsigned long long)e.host_bytes,
                      (unsigned long long)rows[i].cpu);
        assert_int_equal(e.model_states_bytes, rows[i].gpu);
        assert_int_equal(e.host_bytes, rows[i].cpu);
        /* the breakdown still sums to the peak */
        const od_breakdown *b = &e.at_peak;
        assert_int_equal(b->parameters + b->gradients + b->optimizer_states + b->activations +
                             b->logits_and_loss + b->kv_cache + b->temporaries + b->workspace,
                         e.peak_allocated_bytes);
        /* additional_buffer_factor scales the host figure alone */
        w.buffer_factor = 3.0;
        od_estimate e3 = est(&m, &w);
        assert_int_equal(e3.host_bytes, rows[i].cpu * 2);
        assert_int_equal(e3.model_states_bytes, rows[i].gpu);
    }
}

/* Mixed precision: half weights and gradients, the fp32 main-gradient copy the optimizer
 * reads, fp32 master weights + Adam moments: 2 + 2 + 4 + 12 = 20 bytes a parameter, as
 * DeepSpeed's ZeRO-0/1 layout (its bf16 optimizer's fp32 gradient buffer); 16 with
 * --main-grads bf16 (the 16-bit gradients alone). */
static void test_mixed_precision(void **state)
{
    (void)state;
    od_model m;
    load("tests/data/configs/mistral-7b-v0.1.json", &m);
    od_workload w;
    od_workload_defaults(&w);
    w.seq = 512;
    w.precision = OD_PREC_MIXED_BF16;
    w.optimizer = OD_OPT_ADAMW_FUSED;
    od_estimate e = est(&m, &w);
    uint64_t P = 7241732096ULL;
    assert_int_equal(e.model_states_bytes, 20 * P);
    assert_int_equal(e.optimizer_peak_bytes, 2 * w.workspace_bytes + 2 * P + 12 * P + 6 * P);
    w.main_grads = OD_MAIN_GRADS_BF16;
    e = est(&m, &w);
    assert_int_equal(e.model_states_bytes, 16 * P);
    assert_int_equal(e.optimizer_peak_bytes, 2 * w.workspace_bytes + 2 * P + 12 * P + 2 * P);
    /* not a mixed precision: no main-gradient buffer to choose */
    w.precision = OD_PREC_AMP_BF16;
    od_error err;
    assert_int_equal(od_estimate_compute(&m, &w, &e, &err), OD_ERR_ARG);
    assert_non_null(strstr(err.msg, "--main-grads"));
    assert_string_equal(od_precision_name(OD_PREC_MIXED_FP16), "mixed-fp16");
}

/* Fine-tuning Llama-2-7B (P = 6738415616; the block linears Pq = P - 2 x 32000 x 4096 -
 * 65 x 4096 norms): QLoRA's NF4 base with double quantization takes
 * Pq x (0.5 + 1/64 + 4/16384) + (P - Pq) x 2 bytes (QLoRA, Dettmers et al. 2023: 7B fits
 * a 24 GB GPU); LoRA targets, --freeze, the paged 8-bit optimizer. */
static void test_fine_tuning(void **state)
{
    (void)state;
    od_model m;
    load("tests/data/configs/llama-2-7b.json", &m);
    od_workload w;
    od_workload_defaults(&w);
    w.seq = 512;
    w.lora_rank = 16;
    w.precision = OD_PREC_BF16;
    const double P = 6738415616.0, Pq = P - 2 * 32000.0 * 4096 - 65 * 4096;
    double adapters = 16.0 * 32 * (4 * (4096 + 4096) + 3 * (4096 + 11008));
    od_estimate bf = est(&m, &w);
    assert_int_equal(bf.at_peak.parameters, (uint64_t)(2 * P + 2 * adapters + 0.5));
    w.base_weights = OD_BASE_NF4;
    od_estimate q = est(&m, &w);
    double nf4 = Pq * (0.5 + 1.0 / 64 + 4.0 / 16384) + (P - Pq) * 2;
    assert_int_equal(q.at_peak.parameters, (uint64_t)(nf4 + 2 * adapters + 0.5));
    assert_true(q.at_peak.parameters < 4.0 * (1 << 30)); /* ~3.6 GiB */
    assert_true(q.peak_allocated_bytes < 16ULL << 30);    /* fits a 24 GB card */
    w.base_weights = OD_BASE_INT8;
    od_estimate i8 = est(&m, &w);
    assert_true(q.at_peak.parameters < i8.at_peak.parameters);
    assert_true(i8.at_peak.parameters < bf.at_peak.parameters);
    /* q,v only: A and B of two projections per layer */
    w.base_weights = OD_BASE_NF4;
    unsigned t;
    assert_int_equal(od_lora_targets_parse("q,v", &t), 0);
    assert_int_equal(t, OD_LORA_Q | OD_LORA_V);
    w.lora_targets = t;
    od_estimate qv = est(&m, &w);
    /* gradients (bf16) and AdamW's two bf16 moments: 6 bytes per adapter parameter */
    assert_int_equal(qv.model_states_bytes - qv.at_peak.parameters, 6ULL * 16 * 32 * 2 * (4096 + 4096));
    char buf[64];
    assert_string_equal(od_lora_targets_text(t, buf, sizeof buf), "q,v");
    assert_int_equal(od_lora_targets_parse("q_proj,k_proj,v_proj,o_proj,gate,up,down", &t), 0);
    assert_int_equal(t, 0); /* all seven = all-linear */
    assert_int_equal(od_lora_targets_parse("q,,x", &t), -1);
    /* paged 8-bit AdamW keeps the 8-bit states */
    w.lora_targets = 0;
    w.optimizer = OD_OPT_ADAM8BIT;
    od_estimate a8 = est(&m, &w);
    w.optimizer = OD_OPT_PAGED_ADAM8BIT;
    od_estimate pg = est(&m, &w);
    assert_int_equal(pg.at_peak.optimizer_states, a8.at_peak.optimizer_states);
    assert_string_equal(od_optimizer_name(OD_OPT_PAGED_ADAM8BIT), "paged-adamw-8bit");
    /* freezing 16 of 32 layers under LoRA: half the adapters, about half the activations */
    w.freeze_layers = 16;
    od_estimate fz = est(&m, &w);
    assert_int_equal((fz.model_states_bytes - fz.at_peak.parameters) * 2,
                     a8.model_states_bytes - a8.at_peak.parameters);
    assert_true(fz.forward_peak_bytes < a8.forward_peak_bytes);
    /* full fine-tuning with the embeddings and 16 layers frozen: the gradients of the rest */
    od_workload_defaults(&w);
    w.precision = OD_PREC_BF16;
    w.freeze_layers = 16;
    od_estimate ff = est(&m, &w);
    od_param_counts pc;
    od_model_count(&m, &pc);
    assert_int_equal(ff.model_states_bytes - ff.at_peak.parameters,
                     6 * (pc.total - pc.embedding - 16 * pc.per_layer));
    /* what cannot be */
    od_error err;
    od_estimate e;
    w.freeze_layers = 33;
    assert_int_equal(od_estimate_compute(&m, &w, &e, &err), OD_ERR_ARG);
    w.freeze_layers = 0;
    w.base_weights = OD_BASE_NF4;
    assert_int_equal(od_estimate_compute(&m, &w, &e, &err), OD_ERR_ARG);
    assert_non_null(strstr(err.msg, "--lora-rank"));
}

/* FSDP and DDP on Llama-2-7B over 8 GPUs, bf16 mixed precision: FULL_SHARD holds the fp32
 * shard (4P/8) plus two gathered 16-bit layers; SHARD_GRAD_OP the whole 16-bit model
 * gathered; DDP's buckets copy every gradient unless gradient_as_bucket_view. */
static void test_fsdp_ddp(void **state)
{
    (void)state;
    od_model m;
    load("tests/data/configs/llama-2-7b.json", &m);
    od_param_counts pc;
    od_model_count(&m, &pc);
    double P = (double)pc.total, unit = (double)pc.per_layer;
    od_workload w;
    od_workload_defaults(&w);
    w.seq = 2048;
    w.ckpt = OD_CKPT_FULL;
    w.dp = 8;
    w.fsdp = OD_FSDP_FULL;
    w.zero = 3;
    od_estimate full = est(&m, &w);
    assert_int_equal(full.at_peak.parameters, (uint64_t)(4 * P / 8 + 2 * 2 * unit + 0.5));
    /* fp32 sharded gradients + one layer's unsharded gradient; AdamW's fp32 moments /8 */
    assert_int_equal(full.model_states_bytes,
                     (uint64_t)(4 * P / 8 + 4 * unit + 4 * P / 8 + 4 * P / 32 + 8 * P / 8 + 0.5));
    w.fsdp = OD_FSDP_GRAD_OP;
    w.zero = 2;
    od_estimate gop = est(&m, &w);
    assert_int_equal(gop.at_peak.parameters, (uint64_t)(4 * P / 8 + 2 * P + 0.5));
    /* hybrid over 2 nodes: shards of 4 */
    w.fsdp = OD_FSDP_HYBRID;
    w.zero = 3;
    w.nodes = 2;
    od_estimate hyb = est(&m, &w);
    assert_int_equal(hyb.at_peak.parameters, (uint64_t)(4 * P / 4 + 2 * 2 * unit + 0.5));
    w.nodes = 1;
    od_error err;
    od_estimate e;
    assert_int_equal(od_estimate_compute(&m, &w, &e, &err), OD_ERR_ARG);
    assert_non_null(strstr(err.msg, "--nodes"));
    /* DDP: replicas, the gradients twice (their buckets) */
    od_workload_defaults(&w);
    w.seq = 2048;
    w.ckpt = OD_CKPT_FULL;
    w.dp = 8;
    od_estimate plain = est(&m, &w);
    w.ddp = 1;
    od_estimate ddp = est(&m, &w);
    assert_int_equal(ddp.model_states_bytes - plain.model_states_bytes, (uint64_t)(4 * P + 0.5));
    w.ddp_bucket_view = 1;
    od_estimate view = est(&m, &w);
    assert_int_equal(view.model_states_bytes, plain.model_states_bytes);
    int found = 0;
    for (size_t i = 0; i < ddp.n_assumptions; i++)
        found |= strstr(ddp.assumptions[i].source, "DistributedDataParallel") != NULL;
    assert_true(found);
    w.zero = 1;
    assert_int_equal(od_estimate_compute(&m, &w, &e, &err), OD_ERR_ARG);
}

/* Korthikanti et al. 2022 (arXiv:2205.05198), Table 2: activation memory per layer, as
 * equations (the table gives no numbers): no parallelism sbh(34 + 5as/h); tensor parallel
 * sbh(10 + 24/t + 5as/(ht)); + sequence parallel sbh/t(34 + 5as/h); tensor parallel +
 * selective recomputation sbh(10 + 24/t); all three 34sbh/t; full recomputation 2sbh.
 * Computed here independently of lib/model/estimate.c. */
static double paper_layer(double s, double b, double h, double a, double t, int sp, od_ckpt ck)
{
    double sbh = s * b * h;
    if (ck == OD_CKPT_FULL)
        return 2 * sbh;
    if (ck == OD_CKPT_SELECTIVE)
        return sp ? 34 * sbh / t : sbh * (10 + 24 / t);
    return sp ? sbh / t * (34 + 5 * a * s / h) : sbh * (10 + 24 / t + 5 * a * s / (h * t));
}

/* The paper's four GPT-3-style models (Table 3: sequence 2048, vocabulary 51200, tensor
 * parallel 8, pipeline 1/8/35/64, micro-batch 4 for 22B and 1 for the others, interleaved
 * schedule with 3 stages per GPU for 175B and 530B, global batch 4/64/280/512). Their sizes
 * come out within 2% of the names; oomdoc's own per-layer count -- the figure its
 * activations are built from -- comes within 2% of every Table 2 row; selective
 * recomputation saves 70% (GPT-3) and 65% (MT-NLG) of the activations as section 5 says;
 * the first pipeline stage holds L layers' worth x (1 + (p-1)/(pm)) (eq. 5 and the
 * interleaved schedule's penalty). Checked against the equations, not measured figures. */
static void test_korthikanti_table2(void **state)
{
    (void)state;
    static const struct { double size; int heads, hidden, layers, pp, vpp, micro, global; } T[] = {
        {22e9, 64, 6144, 48, 1, 1, 4, 4}, {175e9, 96, 12288, 96, 8, 3, 1, 64},
        {530e9, 128, 20480, 105, 35, 3, 1, 280}, {1e12, 160, 25600, 128, 64, 1, 1, 512}};
    for (size_t i = 0; i < sizeof T / sizeof T[0]; i++) {
        char cfg[512];
        int n = snprintf(cfg, sizeof cfg,
                         "{\"model_type\": \"gpt2\", \"n_embd\": %d, \"n_head\": %d, \"n_layer\": %d, "
                         "\"n_positions\": 2048, \"vocab_size\": 51200, \"activation_function\": "
                         "\"gelu\", \"attn_pdrop\": 0.1, \"resid_pdrop\": 0.1, \"embd_pdrop\": 0.1}",
                         T[i].hidden, T[i].heads, T[i].layers);
        od_model m;
        od_error err;
        assert_int_equal(od_hfconfig_parse(cfg, (size_t)n, &m, &err), OD_OK);
        od_param_counts pc;
        od_model_count(&m, &pc);
        assert_true(fabs((double)pc.total / T[i].size - 1) < 0.02);
        od_workload w;
        od_workload_defaults(&w);
        w.seq = 2048;
        w.batch = (uint64_t)T[i].micro;
        w.grad_accum = (uint64_t)(T[i].global / T[i].micro);
        w.precision = OD_PREC_BF16;
        w.attention = OD_ATTN_EAGER;
        w.pp = (uint64_t)T[i].pp;
        w.vpp = (uint64_t)T[i].vpp;
        double s = 2048, b = T[i].micro, h = T[i].hidden, a = T[i].heads;
        const struct { int t, sp; od_ckpt ck; } C[] = {
            {1, 0, OD_CKPT_NONE}, {8, 0, OD_CKPT_NONE}, {8, 1, OD_CKPT_NONE},
            {8, 0, OD_CKPT_SELECTIVE}, {8, 1, OD_CKPT_SELECTIVE}, {8, 0, OD_CKPT_FULL}};
        double got[6];
        for (size_t k = 0; k < sizeof C / sizeof C[0]; k++) {
            w.tp = (uint64_t)C[k].t;
            w.sp = C[k].sp;
            w.ckpt = C[k].ck;
            od_estimate e;
            if (od_estimate_compute(&m, &w, &e, &err) != OD_OK)
                fail_msg("%s", err.msg);
            assert_true(e.paper_layout);
            got[k] = (double)e.per_layer_activation_bytes;
            double want = paper_layer(s, b, h, a, C[k].t, C[k].sp, C[k].ck);
            static const char *const row[] = {"none", "TP", "TP+SP", "TP+selective",
                                              "TP+SP+selective", "full"};
            print_message("  %4.0fB %-16s per layer %12.0f B (Table 2's equation %12.0f, %+.3f%%)\n",
                          T[i].size / 1e9, row[k], got[k], want, 100 * (got[k] / want - 1));
            if (fabs(got[k] / want - 1) >= 0.02)
                fail_msg("%.0fB row %zu: %.0f vs the paper's %.0f", T[i].size / 1e9, k, got[k], want);
            /* the activations at the peak are built from that same figure (with full
             * recomputation the embedding dropout and the final norm, section 4.3's extra
             * terms, are no longer negligible beside 2sbh a layer) */
            double penalty = T[i].vpp > 1 ? 1 + (T[i].pp - 1.0) / (T[i].pp * T[i].vpp) : 1;
            assert_true(fabs(e.activation_layers / (T[i].layers * penalty) - 1) < 1e-9);
            /* + the embedding dropout's mask for each micro-batch in flight on the first
             * stage (theoretical_memory_usage.py: "Dropout in embedding layer (pp_size
             * microbatches in flight)") */
            double emb = s * b * h * e.activation_layers / ((double)T[i].layers / T[i].pp) /
                         (C[k].sp ? C[k].t : 1);
            if (strcmp(e.peak_phase, "optimizer") && C[k].ck != OD_CKPT_FULL &&
                fabs(((double)e.at_peak.activations - emb) / (got[k] * e.activation_layers) - 1) >= 0.01)
                fail_msg("%.0fB row %zu (%s): activations %llu vs %.0f x %.2f", T[i].size / 1e9, k,
                         e.peak_phase, (unsigned long long)e.at_peak.activations, got[k],
                         e.activation_layers);
        }
        /* section 5: selective recomputation keeps 34/(34 + 5as/h) of the activations */
        if (T[i].size == 175e9)
            assert_true(fabs(1 - got[4] / got[2] - 0.70) < 0.01);
        if (T[i].size == 530e9)
            assert_true(fabs(1 - got[4] / got[2] - 0.65) < 0.01);
    }
    /* not the paper's model: the count is still oomdoc's own, but not the paper's layout */
    od_model m;
    load("tests/data/configs/llama-2-7b.json", &m);
    od_workload w;
    od_workload_defaults(&w);
    w.precision = OD_PREC_BF16;
    w.attention = OD_ATTN_EAGER;
    od_estimate e = est(&m, &w);
    assert_false(e.paper_layout);
    assert_true(e.per_layer_activation_bytes > 0);
}

/* --sp and --tp change the per-GPU activations themselves, from the one per-layer count:
 * Llama-2-7B in bf16, batch 2 x 4096. */
static void test_tp_sp_activations(void **state)
{
    (void)state;
    od_model m;
    load("tests/data/configs/llama-2-7b.json", &m);
    od_workload w;
    od_workload_defaults(&w);
    w.precision = OD_PREC_BF16;
    w.batch = 2;
    w.seq = 4096;
    od_estimate e1 = est(&m, &w);
    w.tp = 4;
    od_estimate e4 = est(&m, &w);
    w.sp = 1;
    od_estimate e4s = est(&m, &w);
    const od_estimate *E[] = {&e1, &e4, &e4s};
    for (int i = 0; i < 3; i++) {
        assert_string_not_equal(E[i]->peak_phase, "optimizer");
        assert_true(fabs((double)E[i]->at_peak.activations /
                         ((double)E[i]->per_layer_activation_bytes * E[i]->activation_layers) - 1) < 1e-6);
    }
    /* tp splits heads and MLP width, not the norms and residual stream; sp splits those too */
    assert_true(e4.per_layer_activation_bytes > e1.per_layer_activation_bytes / 4);
    assert_true(e4s.per_layer_activation_bytes < e4.per_layer_activation_bytes);
    assert_true(fabs((double)e4s.per_layer_activation_bytes * 4 / (double)e1.per_layer_activation_bytes - 1) < 0.01);
    assert_true(e4s.peak_allocated_bytes < e4.peak_allocated_bytes);
}

/* --cp: every GPU holds seq/cp tokens; the model states stay whole. --pp/--vpp: the first
 * stage holds L layers' worth (1F1B), x (1 + (pp-1)/(pp vpp)) interleaved. */
static void test_cp_pp(void **state)
{
    (void)state;
    od_model m;
    load("tests/data/configs/llama-2-7b.json", &m);
    od_workload w;
    od_workload_defaults(&w);
    w.precision = OD_PREC_BF16;
    w.seq = 8192;
    od_estimate e1 = est(&m, &w);
    w.cp = 4;
    od_estimate e4 = est(&m, &w);
    assert_true(fabs((double)e4.per_layer_activation_bytes * 4 / (double)e1.per_layer_activation_bytes - 1) < 1e-6);
    assert_int_equal(e4.model_states_bytes, e1.model_states_bytes);
    assert_true(e4.peak_allocated_bytes < e1.peak_allocated_bytes);
    int found = 0;
    for (size_t i = 0; i < e4.n_assumptions; i++)
        found |= strstr(e4.assumptions[i].source, "context_parallel") != NULL;
    assert_true(found);
    od_estimate e;
    od_error err;
    w.seq = 8190; /* not divisible by 2cp */
    assert_int_equal(od_estimate_compute(&m, &w, &e, &err), OD_ERR_ARG);
    w.seq = 8192;
    w.attention = OD_ATTN_EAGER; /* materialized scores: not what CP splits */
    assert_int_equal(od_estimate_compute(&m, &w, &e, &err), OD_ERR_ARG);
    w.attention = OD_ATTN_SDPA;
    w.task = OD_TASK_INFER;
    assert_int_equal(od_estimate_compute(&m, &w, &e, &err), OD_ERR_ARG);
    w.task = OD_TASK_TRAIN;
    w.cp = 1;
    w.pp = 4;
    w.grad_accum = 8;
    od_estimate p = est(&m, &w);
    assert_true(fabs(p.activation_layers - 32) < 1e-9);     /* 8 layers x 4 in flight */
    w.vpp = 2;
    od_estimate v = est(&m, &w);
    assert_true(fabs(v.activation_layers - 32 * (1 + 3.0 / 8)) < 1e-9);
    assert_true(v.peak_allocated_bytes > p.peak_allocated_bytes);
    w.grad_accum = 2; /* fewer micro-batches than stages: all 2 x 2 chunks in flight */
    assert_true(fabs(est(&m, &w).activation_layers - 16) < 1e-9);
    w.vpp = 3; /* 4 x 3 does not divide 32 layers */
    assert_int_equal(od_estimate_compute(&m, &w, &e, &err), OD_ERR_ARG);
    w.pp = 1;
    w.vpp = 2;
    assert_int_equal(od_estimate_compute(&m, &w, &e, &err), OD_ERR_ARG);
}

/* Pipeline stages: the first holds the embedding and pp micro-batches of its layers, the
 * last the head (a copy of the embedding when tied), the loss and one micro-batch; uneven
 * stages put the given layers on the first and last and split the rest evenly. Llama-2-7B
 * (untied), pp 4, 8 micro-batches. */
static void test_pipeline_stages(void **state)
{
    (void)state;
    od_model m;
    load("tests/data/configs/llama-2-7b.json", &m);
    od_param_counts pc;
    od_model_count(&m, &pc);
    od_workload w;
    od_workload_defaults(&w);
    w.seq = 2048;
    w.pp = 4;
    w.grad_accum = 8;
    w.first_stage_layers = 6;
    w.last_stage_layers = 10;
    w.stage = OD_STAGE_FIRST;
    od_estimate first = est(&m, &w);
    assert_int_equal(first.stage_layers, 6);
    assert_string_equal(first.stage_name, "first");
    assert_int_equal(first.stage_params, (uint64_t)(6.0 * pc.layers / 32 + pc.embedding));
    assert_true(fabs(first.activation_layers - 6 * 4) < 1e-9);
    assert_int_equal(first.at_peak.logits_and_loss, 0);
    w.stage = OD_STAGE_LAST;
    od_estimate last = est(&m, &w);
    assert_int_equal(last.stage_layers, 10);
    assert_int_equal(last.stage_params, (uint64_t)(10.0 * pc.layers / 32 + pc.head));
    assert_true(fabs(last.activation_layers - 10) < 1e-9);
    /* the default is the more loaded one */
    w.stage = OD_STAGE_MAX;
    od_estimate mx = est(&m, &w);
    assert_int_equal(mx.peak_allocated_bytes, first.peak_allocated_bytes > last.peak_allocated_bytes
                                                  ? first.peak_allocated_bytes : last.peak_allocated_bytes);
    /* layers that do not split evenly over the middle stages are refused */
    w.first_stage_layers = 7;
    od_error err;
    od_estimate e;
    assert_int_equal(od_estimate_compute(&m, &w, &e, &err), OD_ERR_ARG);
    assert_non_null(strstr(err.msg, "--first-stage-layers"));
}

/* MoE generate(): the decode steps run transformers' batched_mm experts, which gather a
 * copy of gate_up_proj (2I x h) and down_proj (h x I) for every (token, expert) pair
 * (integrations/moe.py); the prefill's grouped_mm copies nothing. Mixtral-8x7B in bf16:
 * 2 x (3 x 14336 x 4096 x 2 + 2 x (2 x 4096 + 4 x 14336)) bytes a token in one layer. */
static void test_moe_decode(void **state)
{
    (void)state;
    od_model m;
    load("tests/data/configs/mixtral-8x7b.json", &m);
    od_workload w;
    od_workload_defaults(&w);
    w.task = OD_TASK_INFER;
    w.batch = 4;
    w.prompt = 512;
    w.new_tokens = 64;
    od_estimate e = est(&m, &w);
    uint64_t per = 2 * (3ULL * 14336 * 4096 * 2 + 2 * (2 * 4096 + 4 * 14336));
    assert_int_equal(e.moe_decode_copy_bytes_per_token, per);
    assert_string_equal(e.peak_phase, "decode");
    assert_int_equal(e.at_peak.temporaries, 4 * per); /* one decode step of 4 tokens */
    /* without a cache every decode step re-runs the sequence through batched_mm */
    w.kv_cache = OD_KV_NONE;
    od_estimate n = est(&m, &w);
    assert_int_equal(n.at_peak.temporaries, 4 * (512 + 63) * per);
    /* one new token: the prefill alone, no decode step, no copies */
    w.new_tokens = 1;
    assert_int_equal(est(&m, &w).at_peak.temporaries, 0);
    /* a dense model has none */
    load("tests/data/configs/llama-2-7b.json", &m);
    assert_int_equal(est(&m, &w).moe_decode_copy_bytes_per_token, 0);
}

/* State-space layers hold a fixed state, not a KV cache. Lieber et al. 2024 (Jamba,
 * arXiv:2403.19887), Table 1: the 16-bit KV cache of a 256K-token context is 4GB for Jamba
 * (4 attention layers of 32) and 32GB for Mixtral. */
static void test_ssm_state(void **state)
{
    (void)state;
    od_model m;
    load("tests/data/configs/jamba-1.5-mini.json", &m);
    od_workload w;
    od_workload_defaults(&w);
    w.task = OD_TASK_INFER;
    od_estimate e = est(&m, &w);
    assert_int_equal(e.kv_cache_bytes_per_token * 262144, 4ULL << 30);
    assert_int_equal(e.ssm_state_bytes_per_sequence, 28ULL * 8192 * (4 + 16) * 2);
    od_model mx;
    load("tests/data/configs/mixtral-8x7b.json", &mx);
    assert_int_equal(est(&mx, &w).kv_cache_bytes_per_token * 262144, 32ULL << 30);
    /* Mamba: the cache row is the state alone, whatever the length */
    load("tests/data/configs/mamba-130m.json", &m);
    w.batch = 4;
    od_estimate a = est(&m, &w);
    w.new_tokens = 1024;
    od_estimate b = est(&m, &w);
    assert_int_equal(a.kv_cache_bytes_per_token, 0);
    assert_int_equal(a.at_peak.kv_cache, 4 * a.ssm_state_bytes_per_sequence);
    assert_int_equal(b.at_peak.kv_cache, a.at_peak.kv_cache);
    assert_string_equal(a.attention_kernel, "none");
    /* training: the mixers' saved tensors grow with the tokens */
    od_workload t;
    od_workload_defaults(&t);
    t.seq = 2048;
    od_estimate t1 = est(&m, &t);
    t.seq = 4096;
    od_estimate t2 = est(&m, &t);
    assert_true(t1.per_layer_activation_bytes > 0);
    assert_true(fabs((double)t2.per_layer_activation_bytes / (double)t1.per_layer_activation_bytes - 2) < 0.01);
    /* DeBERTa-v2 has no SDPA path: eager scores */
    load("tests/data/configs/deberta-v3-base.json", &m);
    assert_string_equal(est(&m, &t).attention_kernel, "eager");
}

/* vLLM on Llama-2-7B: 8 MiB blocks of 16 tokens (16 x 512 KiB); the KV cache is what
 * 0.9 of the GPU leaves after weights, the profiling peak and the CUDA context. */
static void test_vllm(void **state)
{
    (void)state;
    od_model m;
    load("tests/data/configs/llama-2-7b.json", &m);
    assert_int_equal(m.max_positions, 4096);
    od_workload w;
    od_workload_defaults(&w);
    w.task = OD_TASK_INFER;
    od_gpu gpu;
    od_error err;
    assert_int_equal(od_gpu_lookup("a100-80", &gpu, &err), OD_OK);
    od_vllm_config c;
    od_vllm_config_defaults(&c);
    c.max_model_len = 4096;
    od_vllm_plan v;
    assert_int_equal(od_plan_vllm(&m, &w, &gpu, &c, &v, &err), OD_OK);
    assert_int_equal(v.block_bytes, 16ULL * 524288);
    assert_int_equal(v.weights_bytes, 2ULL * 6738415616ULL);
    assert_int_equal(v.budget_bytes, (uint64_t)(0.9 * (double)gpu.memory_bytes));
    assert_int_equal(v.kv_cache_bytes, v.budget_bytes - v.weights_bytes - v.activation_bytes -
                                           v.non_torch_bytes);
    assert_int_equal(v.num_blocks, v.kv_cache_bytes / v.block_bytes);
    assert_int_equal(v.blocks_per_seq, 256);
    assert_int_equal(v.max_concurrent_seqs, v.num_blocks / 256);
    assert_true(v.fits && v.max_concurrent_seqs > 20 && v.max_concurrent_seqs < 32);
    /* an fp8 cache doubles the blocks; tp 2 halves the weights and the block */
    w.kv_bytes = 1;
    od_vllm_plan v8;
    assert_int_equal(od_plan_vllm(&m, &w, &gpu, &c, &v8, &err), OD_OK);
    assert_int_equal(v8.block_bytes * 2, v.block_bytes);
    assert_true(v8.num_blocks >= 2 * v.num_blocks);
    w.kv_bytes = 0;
    w.tp = 2;
    od_vllm_plan v2;
    assert_int_equal(od_plan_vllm(&m, &w, &gpu, &c, &v2, &err), OD_OK);
    assert_int_equal(v2.weights_bytes, 6738415616ULL);
    assert_int_equal(v2.block_bytes * 2, v.block_bytes);
    /* a T4 holds the weights but no KV block is left */
    w.tp = 1;
    assert_int_equal(od_gpu_lookup("t4", &gpu, &err), OD_OK);
    assert_int_equal(od_plan_vllm(&m, &w, &gpu, &c, &v, &err), OD_OK);
    assert_false(v.fits);
    c.gpu_memory_utilization = 0;
    assert_int_equal(od_plan_vllm(&m, &w, &gpu, &c, &v, &err), OD_ERR_ARG);
}

/* Quantized inference weights: only the block linears are packed (Llama-2-7B: 6,476,005,376
 * of 6,738,415,616 parameters); embeddings, lm_head and norms stay 16-bit. GPTQ and AWQ at
 * group 128 add a 4-bit zero and an fp16 scale per 128 values, GPTQ an int32 g_idx per
 * input column of each merged linear (qkv and gate_up read h, o reads h, down reads I). */
static void test_quantized_weights(void **state)
{
    (void)state;
    od_model m;
    load("tests/data/configs/llama-2-7b.json", &m);
    od_workload w;
    od_workload_defaults(&w);
    w.task = OD_TASK_INFER;
    double P = 6738415616.0, Pm = 6476005376.0, rest = 2 * (P - Pm);
    double K = 32.0 * (4096 + 4096 + 4096 + 11008);
    static const struct { od_weights wt; double bytes_per; double extra; } C[] = {
        {OD_W_AWQ4, 0.5 + 2.5 / 128, 0}, {OD_W_NF4, 0.5 + 4.0 / 64, 0}, {OD_W_FP8, 1, 0}};
    for (size_t i = 0; i < 3; i++) {
        w.weights = C[i].wt;
        od_estimate e = est(&m, &w);
        assert_int_equal(e.quantized_params, (uint64_t)Pm);
        assert_true(fabs((double)e.at_peak.parameters - (Pm * C[i].bytes_per + rest)) < 1);
    }
    w.weights = OD_W_AWQ4;
    uint64_t awq = est(&m, &w).at_peak.parameters;
    w.weights = OD_W_GPTQ4;
    od_estimate g = est(&m, &w);
    assert_int_equal(g.at_peak.parameters - awq, (uint64_t)(4 * K));
    int found = 0;
    for (size_t i = 0; i < g.n_assumptions; i++)
        found |= strstr(g.assumptions[i].text, "lm_head") != NULL;
    assert_true(found);
    /* vLLM: smaller weights leave more KV blocks; the names parse back */
    od_gpu gpu;
    od_error err;
    assert_int_equal(od_gpu_lookup("a100-80", &gpu, &err), OD_OK);
    od_vllm_config c;
    od_vllm_config_defaults(&c);
    c.max_model_len = 4096;
    od_vllm_plan q, b;
    assert_int_equal(od_plan_vllm(&m, &w, &gpu, &c, &q, &err), OD_OK);
    w.weights = OD_W_BF16;
    assert_int_equal(od_plan_vllm(&m, &w, &gpu, &c, &b, &err), OD_OK);
    assert_int_equal(q.quantized_params, (uint64_t)Pm);
    assert_int_equal(b.quantized_params, 0);
    assert_true(q.num_blocks > b.num_blocks);
    assert_string_equal(od_weights_name(OD_W_GPTQ4), "gptq-int4");
    assert_string_equal(od_weights_name(OD_W_FP8), "fp8");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gpus_by_memory),
        cmocka_unit_test(test_kv_cache),
        cmocka_unit_test(test_optimizer_and_zero),
        cmocka_unit_test(test_directions),
        cmocka_unit_test(test_max_batch),
        cmocka_unit_test(test_gpus),
        cmocka_unit_test(test_bad_workloads),
        cmocka_unit_test(test_opt_kv_evidence),
        cmocka_unit_test(test_bert_evidence),
        cmocka_unit_test(test_kv_caps),
        cmocka_unit_test(test_lora_no_optimizer_changes),
        cmocka_unit_test(test_deepspeed_t5),
        cmocka_unit_test(test_mixed_precision),
        cmocka_unit_test(test_fine_tuning),
        cmocka_unit_test(test_fsdp_ddp),
        cmocka_unit_test(test_korthikanti_table2),
        cmocka_unit_test(test_tp_sp_activations),
        cmocka_unit_test(test_cp_pp),
        cmocka_unit_test(test_pipeline_stages),
        cmocka_unit_test(test_moe_decode),
        cmocka_unit_test(test_ssm_state),
        cmocka_unit_test(test_quantized_weights),
        cmocka_unit_test(test_vllm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
