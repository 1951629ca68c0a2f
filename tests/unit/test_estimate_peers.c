/* test_estimate_peers.c - the planner against the peers' own code. Each figure below is
 * what the peer's function printed when run (its text saved outside this repository, the
 * imports stubbed: they are arithmetic) on public models' sizes; the file and commit of
 * every function is beside its figures:
 *   DeepSpeed   deepspeedai/DeepSpeed deepspeed/runtime/zero/stage_1_and_2.py
 *               @ 02aa38c3a55174c87b33c4ad17a304389d037443 estimate_zero2_model_states_mem_needs;
 *               deepspeed/runtime/zero/stage3.py @ 007cca6a2ffe3ed9d393459f4a3081bd54341ba6
 *               estimate_zero3_model_states_mem_needs (largest_layer_params as model_to_params
 *               counts it: the largest module's own parameters)
 *   Megatron    NVIDIA/Megatron-LM megatron/training/theoretical_memory_usage.py
 *               @ 00caa53af30912914981c86f39db123961678bbd compute_weight_and_optimizer_memory,
 *               compute_activation_memory
 *   vLLM        vllm-project/vllm vllm/v1/kv_cache_interface.py and v1/core/kv_cache_utils.py
 *               @ 001cabc1be16a59a70d720ed61a13b678c060a18 (page sizes, max_memory_usage_bytes,
 *               get_num_blocks, KV-cache groups, get_max_concurrency_for_kv_cache_config),
 *               vllm/config/model.py get_num_kv_heads, vllm/engine/arg_utils.py
 *               @ 99d7eb5d6a512cfcc5a2b104f24ebf2d6cda772b (V1 batch defaults)
 *   accelerate  huggingface/accelerate src/accelerate/commands/estimate.py
 *               @ 00e4d264f66d9694ba6116a0dbe7ecec83655b43 (the dtype table's "Largest Layer") */
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

#include "model/plan.h"
#include "read/hfconfig.h"

static void load(const char *path, od_model *m)
{
    size_t len;
    char *t = slurp(path, &len);
    od_error err;
    od_status st = od_hfconfig_parse(t, len, m, &err);
    if (st != OD_OK)
        fail_msg("%s: %s", path, err.msg);
    free(t);
}

static od_estimate est(const od_model *m, const od_workload *w)
{
    od_estimate e;
    od_error err;
    if (od_estimate_compute(m, w, &e, &err) != OD_OK)
        fail_msg("%s", err.msg);
    return e;
}

/* DeepSpeed's estimators (per GPU, per CPU node; buffer factor 1.5) on five models: two
 * dense, three MoE (transformers 5's fused experts module is the largest module: Mixtral
 * 8 x 3 x 14336 x 4096, DeepSeek-V2-Lite 64 x 3 x 1408 x 2048). plan's model states and
 * host RAM equal them to the byte. */
static void test_deepspeed_estimators(void **state)
{
    (void)state;
    static const struct {
        const char *config;
        uint64_t params, largest;
    } M[] = {
        {"tests/data/configs/llama-2-7b.json", 6738415616ULL, 131072000ULL},
        {"tests/data/configs/mistral-7b-v0.1.json", 7241732096ULL, 131072000ULL},
        {"tests/data/configs/mixtral-8x7b.json", 46702792704ULL, 1409286144ULL},
        {"examples/configs/deepseek-v2-lite.json", 15706484224ULL, 553648128ULL},
        {"examples/configs/gpt2-355m.json", 357968896ULL, 51463168ULL},
    };
    /* zero, gpus per node, nodes, offload optimizer, offload params, zero_init */
    static const int R[6][6] = {{2, 8, 1, 0, 0, 0}, {2, 8, 1, 1, 0, 0}, {3, 8, 1, 0, 0, 1},
                                {3, 8, 1, 1, 0, 1}, {3, 8, 1, 1, 1, 1}, {3, 8, 2, 0, 0, 0}};
    static const uint64_t GPU[5][6] = {
        {28638266368ULL, 13476831232ULL, 15685723136ULL, 2208891904ULL, 524288000ULL, 8105005568ULL},
        {30777361408ULL, 14483464192ULL, 16818185216ULL, 2334721024ULL, 524288000ULL, 8671236608ULL},
        {198486868992ULL, 93405585408ULL, 110718428160ULL, 17312842752ULL, 5637144576ULL, 58177786368ULL},
        {66752557952ULL, 31412968448ULL, 37554182016ULL, 6141213568ULL, 2214592512ULL, 19884387264ULL},
        {1521367808ULL, 715937792ULL, 1011282688ULL, 295344896ULL, 205852672ULL, 608567680ULL}};
    static const uint64_t CPU[5][6] = {
        {323443949568ULL, 323443949568ULL, 6291456000ULL, 161721974784ULL, 181937221632ULL, 323443949568ULL},
        {347603140608ULL, 347603140608ULL, 6291456000ULL, 173801570304ULL, 195526766592ULL, 347603140608ULL},
        {2241734049792ULL, 2241734049792ULL, 67645734912ULL, 1120867024896ULL, 1260975403008ULL, 2241734049792ULL},
        {753911242752ULL, 753911242752ULL, 26575110144ULL, 376955621376ULL, 424075074048ULL, 753911242752ULL},
        {17182507008ULL, 17182507008ULL, 2470232064ULL, 8591253504ULL, 9665160192ULL, 17182507008ULL}};
    for (size_t i = 0; i < 5; i++) {
        od_model m;
        load(M[i].config, &m);
        od_param_counts pc;
        od_model_count(&m, &pc);
        assert_int_equal(pc.total, M[i].params);
        assert_int_equal(pc.largest_module, M[i].largest);
        for (size_t r = 0; r < 6; r++) {
            od_workload w;
            od_workload_defaults(&w);
            w.seq = 512;
            w.deepspeed = 1;
            w.zero = R[r][0];
            w.dp = (uint64_t)(R[r][1] * R[r][2]);
            w.nodes = (uint64_t)R[r][2];
            w.offload_optimizer = R[r][3];
            w.offload_params = R[r][4];
            w.zero_init = R[r][5];
            od_estimate e = est(&m, &w);
            if (e.model_states_bytes != GPU[i][r] || e.host_bytes != CPU[i][r])
                fail_msg("%s row %zu: GPU %llu (DeepSpeed %llu), CPU %llu (%llu)", M[i].config, r,
                         (unsigned long long)e.model_states_bytes, (unsigned long long)GPU[i][r],
                         (unsigned long long)e.host_bytes, (unsigned long long)CPU[i][r]);
        }
    }
    /* the generic --zero 2 lays mixed precision out the same way: 2P + 18P/N */
    od_model m;
    load("tests/data/configs/llama-2-7b.json", &m);
    od_workload w;
    od_workload_defaults(&w);
    w.precision = OD_PREC_MIXED_BF16;
    w.zero = 2;
    w.dp = 8;
    assert_int_equal(est(&m, &w).model_states_bytes, 28638266368ULL);
}

/* NVMe (ZeRO-Infinity): the states (fp32 master, gradient, moments: 16 bytes a
 * parameter) or the 16-bit parameters move to NVMe per node; the host keeps DeepSpeed's
 * default swap buffers (offload_config.py @ 1978617: 4 optimizer buffers of a sub-group,
 * 5 parameter buffers of 1e8 elements and max_in_cpu 1e9), x the buffer factor. */
static void test_deepspeed_nvme(void **state)
{
    (void)state;
    od_model m;
    load("tests/data/configs/llama-2-7b.json", &m);
    double P = 6738415616.0, N = 8;
    od_workload w;
    od_workload_defaults(&w);
    w.deepspeed = 1;
    w.zero = 3;
    w.dp = 8;
    w.zero_init = 1;
    w.offload_optimizer = OD_OFFLOAD_NVME;
    od_estimate e = est(&m, &w);
    assert_int_equal(e.nvme_bytes, (uint64_t)(16 * P));
    assert_true(fabs((double)e.host_bytes - 1.5 * 4 * (P / N) * 4 * N) < 2);
    /* GPU as with CPU offload: two gathered modules + the 16-bit parameter shard */
    assert_int_equal(e.model_states_bytes, 4ULL * 131072000 + (uint64_t)(2 * P / N));
    w.offload_params = OD_OFFLOAD_NVME;
    e = est(&m, &w);
    assert_int_equal(e.nvme_bytes, (uint64_t)(18 * P));
    assert_int_equal(e.model_states_bytes, 4ULL * 131072000);
    /* NVMe is ZeRO-3's; elsewhere refused */
    w.zero = 2;
    w.offload_params = 0;
    w.zero_init = 0;
    od_error err;
    assert_int_equal(od_estimate_compute(&m, &w, &e, &err), OD_ERR_ARG);
    assert_non_null(strstr(err.msg, "ZeRO-Infinity"));
}

/* Megatron's theoretical_memory_usage.py (weights + optimizer of the most loaded shard,
 * the per-layer activation figure of its selective + sequence-parallel branch) against
 * plan --framework megatron. The weights agree to the byte where the model has no biases
 * (Llama); GPT-3's 0.12% are its biases and learned positions, which the peer's formula
 * leaves out. Per-layer activations: GPT-3 (LayerNorm, GeLU, MHA, dropout) within 0.1%;
 * Llama is derived from Megatron-Core's TE layer, which keeps SwiGLU's 2I input and GQA's
 * narrower K/V: the peer's GPT formula (18 + 4I/h) has neither. */
static void test_megatron_theoretical(void **state)
{
    (void)state;
    static const char gpt3[] =
        "{\"model_type\": \"gpt2\", \"n_embd\": 12288, \"n_head\": 96, \"n_layer\": 96, \"n_positions\": "
        "2048, \"vocab_size\": 51200, \"activation_function\": \"gelu\", \"attn_pdrop\": 0.1, "
        "\"resid_pdrop\": 0.1, \"embd_pdrop\": 0.1}";
    od_model m;
    od_error err;
    assert_int_equal(od_hfconfig_parse(gpt3, strlen(gpt3), &m, &err), OD_OK);
    od_workload w;
    od_workload_defaults(&w);
    w.megatron = 1;
    w.tp = 8;
    w.sp = 1;
    w.pp = 8;
    w.dp = 8;
    w.zero = 1;
    w.seq = 2048;
    w.grad_accum = 64;
    w.ckpt = OD_CKPT_SELECTIVE;
    w.stage = OD_STAGE_FIRST;
    od_estimate e = est(&m, &w);
    double weights = 20974697280.0, layer = 106954752.0;
    print_message("  GPT-3 175B: weights+optimizer %llu (Megatron %.0f, x%.4f), per layer %llu (%.0f, x%.4f)\n",
                  (unsigned long long)e.model_states_bytes, weights, e.model_states_bytes / weights,
                  (unsigned long long)e.per_layer_activation_bytes, layer, e.per_layer_activation_bytes / layer);
    assert_true(fabs(e.model_states_bytes / weights - 1) < 0.002);
    assert_true(fabs(e.per_layer_activation_bytes / layer - 1) < 0.001);
    assert_int_equal(e.stage_layers, 12);
    /* the first stage holds pp micro-batches of its 12 layers */
    assert_true(fabs(e.activation_layers - 12.0 * 8) < 1e-9);

    load("tests/data/configs/llama-2-7b.json", &m);
    od_workload_defaults(&w);
    w.megatron = 1;
    w.tp = 2;
    w.sp = 1;
    w.dp = 4;
    w.zero = 1;
    w.seq = 4096;
    w.ckpt = OD_CKPT_SELECTIVE;
    e = est(&m, &w);
    assert_int_equal(e.model_states_bytes, 30322870272ULL);            /* 6 + 12/d bytes */
    /* per token on one of 2 tp GPUs with sp: two TE norms (input, output, rstd) / 2,
     * q k v and the attention output / 2, the log-sum-exp, SwiGLU's 2I input and I product / 2 */
    double h = 4096, I = 11008, tok = 2 * (2 * h + 2 * h + 4) / 2 + 2 * (h / 2 + 2 * h / 2) + 2 * h / 2 +
                                     4 * 32 / 2 + 6 * I / 2;
    assert_int_equal(e.per_layer_activation_bytes, (uint64_t)(tok * 4096));
    print_message("  Llama-2-7B: per layer %llu (Megatron's GPT formula 241172480, x%.3f)\n",
                  (unsigned long long)e.per_layer_activation_bytes, e.per_layer_activation_bytes / 241172480.0);
    w.zero = 0;                                                          /* 18 bytes a parameter */
    assert_int_equal(est(&m, &w).model_states_bytes, 60645740544ULL);
    w.main_grads = OD_MAIN_GRADS_BF16;                                  /* --grad-reduce-in-bf16: 16 */
    assert_int_equal(est(&m, &w).model_states_bytes, 60645740544ULL / 18 * 16);

    load("tests/data/configs/llama-3-8b.json", &m);
    od_workload_defaults(&w);
    w.megatron = 1;
    w.pp = 2;
    w.dp = 8;
    w.zero = 1;
    w.seq = 8192;
    w.grad_accum = 8;
    w.stage = OD_STAGE_FIRST;
    e = est(&m, &w);
    /* the peer counts the final norm into every stage's share: 4096 x 1 / 2 parameters */
    assert_true(fabs(e.model_states_bytes / 30113479680.0 - 1) < 1e-5);

    load("tests/data/configs/mixtral-8x7b.json", &m);
    od_workload_defaults(&w);
    w.megatron = 1;
    w.dp = 8;
    w.zero = 1;
    w.seq = 4096;
    e = est(&m, &w);
    assert_true(fabs(e.model_states_bytes / 350263080960.0 - 1) < 1e-4); /* + the routers */
    /* expert parallelism over 8: each GPU holds one expert of each layer; the experts'
     * optimizer state shards over the expert data-parallel group (8 x 1 x 1 / 8 = 1) */
    w.ep = 8;
    od_estimate ep = est(&m, &w);
    double L = 32, h2 = 4096, experts = 8.0 * 3 * 14336 * h2 * L, dense = 46702792704.0 - experts;
    assert_true(fabs((double)ep.at_peak.parameters - 2 * (dense + experts / 8)) < 2);
    assert_true(fabs((double)ep.at_peak.optimizer_states - 12 * (dense / 8 + experts / 8)) < 2);
}

/* vLLM's own KV arithmetic, given the KV memory plan leaves: page bytes (AttentionSpec /
 * MLAAttentionSpec), blocks a request of max_model_len needs (FullAttentionSpec,
 * SlidingWindowSpec), the layers a KV-cache group holds, and the V1 batch defaults for
 * the GPU. The blocks vLLM's get_num_blocks and get_max_concurrency_for_kv_cache_config
 * give for plan's memory are in the comments (plan gives the same). */
static void test_vllm_kv(void **state)
{
    (void)state;
    static const struct {
        const char *config, *gpu;
        uint64_t tp, pp, max_len;
        int kv_bytes;
        uint64_t tokens, seqs, page, per_seq, group;
    } C[] = {
        /* MHA on an A100-80 (small defaults): 7407 blocks, concurrency 28.93 */
        {"tests/data/configs/llama-2-7b.json", "a100-80", 1, 1, 4096, 0, 2048, 256, 262144, 256, 32},
        /* GQA on an H100: 27728 blocks, 54.16 */
        {"tests/data/configs/llama-3-8b.json", "h100", 1, 1, 0, 0, 8192, 1024, 65536, 512, 32},
        /* GQA at TP 2: 63830, 124.67 */
        {"tests/data/configs/llama-3-8b.json", "h100", 2, 1, 0, 0, 8192, 1024, 32768, 512, 32},
        /* TP 16 over 8 KV heads: each rank keeps one (copied): 284625, 555.91 */
        {"tests/data/configs/llama-3-8b.json", "h100", 16, 1, 0, 0, 8192, 1024, 8192, 512, 32},
        /* an L4, fp8 KV: 4139, 8.08 */
        {"tests/data/configs/llama-3-8b.json", "l4", 1, 1, 8192, 1, 2048, 256, 32768, 512, 32},
        /* sliding window 4096, every layer: min(4095 + 8192, 32768) tokens a request: 28668, 37.28 */
        {"tests/data/configs/mistral-7b-v0.1.json", "h100", 1, 1, 0, 0, 8192, 1024, 65536, 769, 32},
        /* the same on an L4: 2868, 7.45 */
        {"tests/data/configs/mistral-7b-v0.1.json", "l4", 1, 1, 16384, 0, 2048, 256, 65536, 385, 32},
        /* Gemma 2: 21 sliding + 21 full layers, two groups of 21: 20068, 19.58 */
        {"examples/configs/gemma-2-9b.json", "h100", 1, 1, 0, 0, 8192, 1024, 131072, 1025, 21},
        /* MLA at TP 2: the latent (512 + 64) whole on each rank: 118984, 58.10 */
        {"examples/configs/deepseek-v2-lite.json", "h100", 2, 1, 32768, 0, 8192, 1024, 18432, 2048, 27},
        /* MLA on one H100: 85837, 41.91 */
        {"examples/configs/deepseek-v2-lite.json", "h100", 1, 1, 32768, 0, 8192, 1024, 18432, 2048, 27},
        /* MQA at TP 2 (the one KV head copied): 117582, 229.65 */
        {"tests/data/configs/gemma-2b.json", "a100-40", 2, 1, 0, 0, 2048, 256, 16384, 512, 18},
        /* pipeline 3: 11 + 11 + 10 layers (get_pp_indices): 24339, 95.07 */
        {"tests/data/configs/llama-2-7b.json", "h100", 1, 3, 0, 0, 8192, 1024, 262144, 256, 11},
    };
    for (size_t i = 0; i < sizeof C / sizeof C[0]; i++) {
        od_model m;
        load(C[i].config, &m);
        od_workload w;
        od_workload_defaults(&w);
        w.task = OD_TASK_INFER;
        w.tp = C[i].tp;
        w.kv_bytes = C[i].kv_bytes;
        od_gpu g;
        od_error err;
        assert_int_equal(od_gpu_lookup(C[i].gpu, &g, &err), OD_OK);
        w.workspace_bytes = g.workspace_bytes;
        od_vllm_config c;
        od_vllm_config_defaults(&c);
        c.pp = C[i].pp;
        c.max_model_len = C[i].max_len ? C[i].max_len : m.max_positions;
        od_vllm_plan v;
        if (od_plan_vllm(&m, &w, &g, &c, &v, &err) != OD_OK)
            fail_msg("%s: %s", C[i].config, err.msg);
        print_message("  %s on %s tp %llu pp %llu: page %llu, %llu blocks a request, %llu blocks, "
                      "concurrency %.2f\n", C[i].config, C[i].gpu, (unsigned long long)C[i].tp,
                      (unsigned long long)C[i].pp, (unsigned long long)v.page_bytes,
                      (unsigned long long)v.blocks_per_seq, (unsigned long long)v.num_blocks, v.max_concurrency);
        assert_int_equal(v.max_num_batched_tokens, C[i].tokens);
        assert_int_equal(v.max_num_seqs, C[i].seqs);
        assert_int_equal(v.page_bytes, C[i].page);
        assert_int_equal(v.blocks_per_seq, C[i].per_seq);
        assert_int_equal(v.group_size, C[i].group);
        assert_int_equal(v.num_blocks, v.kv_cache_bytes / C[i].page / C[i].group);
    }
}

/* accelerate's estimate-memory table: "Largest Layer" is the largest unit device_map keeps
 * whole (a decoder layer, _no_split_modules), the total divided by 2 / 4 / 8 for float16,
 * int8, int4. Llama-2-7B's decoder layer: 4 x 4096^2 + 3 x 4096 x 11008 + 2 x 4096. */
static void test_accelerate_largest_layer(void **state)
{
    (void)state;
    od_model m;
    load("tests/data/configs/llama-2-7b.json", &m);
    uint64_t layer = 4ULL * 4096 * 4096 + 3ULL * 4096 * 11008 + 2 * 4096;
    static const struct { od_weights wt; double bytes; } C[] = {
        {OD_W_FP32, 4}, {OD_W_BF16, 2}, {OD_W_INT8, 1}, {OD_W_INT4, 0.5}};
    for (size_t i = 0; i < 4; i++) {
        od_workload w;
        od_workload_defaults(&w);
        w.task = OD_TASK_INFER;
        w.weights = C[i].wt;
        assert_int_equal(est(&m, &w).largest_layer_bytes, (uint64_t)(layer * C[i].bytes));
    }
    /* Mixtral: one MoE decoder layer holds its 8 experts */
    load("tests/data/configs/mixtral-8x7b.json", &m);
    od_param_counts pc;
    od_model_count(&m, &pc);
    assert_int_equal(pc.largest_layer, 4096ULL * 4096 * 2 + 2ULL * 4096 * 1024 + 8ULL * 3 * 4096 * 14336 +
                                           4096ULL * 8 + 2 * 4096);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deepspeed_estimators),
        cmocka_unit_test(test_deepspeed_nvme),
        cmocka_unit_test(test_megatron_theoretical),
        cmocka_unit_test(test_vllm_kv),
        cmocka_unit_test(test_accelerate_largest_layer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
