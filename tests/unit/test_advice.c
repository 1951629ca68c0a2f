/* test_advice.c - the advice for the reports of the newer wordings: each report's remedies and
 * meaning come from its kind, framework and library, on real lines from the fixtures. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "analyze/advice.h"
#include "read/triage/triage.h"

static od_triage *parse_str(const char *s)
{
    od_triage *t = NULL;
    od_error err;
    assert_int_equal(od_triage_parse(s, strlen(s), &t, &err), OD_OK);
    assert_int_equal(t->n_reports, 1);
    return t;
}

/* Does the report's advice list hold a? At which place (-1: not there)? */
static int place_of(const od_oom_report *r, od_advice a)
{
    od_advice h[10];
    size_t n = od_advice_for_report(r, h, 10);
    for (size_t i = 0; i < n; i++)
        if (h[i] == a)
            return (int)i;
    return -1;
}

static void thc_era(void **state)
{
    (void)state;
    /* real/007: PyTorch 0.4's THC message, no figures */
    od_triage *t = parse_str("RuntimeError: cuda runtime error (2) : out of memory at "
                             "/pytorch/aten/src/THC/generic/THCStorage.cu:58\n");
    const od_oom_report *r = &t->reports[0];
    assert_int_equal(r->framework, OD_FW_PYTORCH_CUDA);
    assert_true(r->have_torch_range);
    assert_int_equal(place_of(r, OD_ADV_THC_ERA), 0);
    assert_non_null(strstr(od_advice_meaning(r), "0.4 or older"));
    /* the hints turn the snapshot advice into an upgrade: no 0.x release records one */
    od_hint h[8];
    size_t n = od_advice_hints(r, h, 8);
    int upgrade = 0;
    for (size_t i = 0; i < n; i++)
        upgrade |= h[i].upgrade && strstr(h[i].action, "upgrade to torch >= 2.1") != NULL;
    assert_true(upgrade);
    od_triage_free(t);
    /* Lua Torch's own: the same words, no PyTorch era advice */
    t = parse_str("THCudaCheck FAIL file=/home/m/distro/extra/cutorch/lib/THC/generic/THCStorage.cu line=66 "
                  "error=2 : out of memory\n/home/m/distro/install/bin/luajit: lbfgs.lua:85: cuda runtime error "
                  "(2) : out of memory\n");
    r = &t->reports[0];
    assert_int_equal(r->framework, OD_FW_OTHER);
    assert_string_equal(r->library, "torch7");
    assert_int_equal(place_of(r, OD_ADV_THC_ERA), -1);
    assert_int_equal(place_of(r, OD_ADV_RUNTIME_LIMITS), 0);
    assert_non_null(strstr(od_advice_meaning(r), "Lua Torch"));
    od_triage_free(t);
}

static void kernel_and_engine_kinds(void **state)
{
    (void)state;
    od_triage *t = parse_str("triton.runtime.autotuner.OutOfResources: out of resource: shared memory, Required: "
                             "663808, Hardware limit: 101376. Reducing block sizes or `num_stages` may help.\n");
    const od_oom_report *r = &t->reports[0];
    assert_int_equal(r->kind, OD_KIND_KERNEL_RESOURCES);
    assert_int_equal(r->requested_bytes, 663808);
    assert_int_equal(r->capacity_bytes, 101376);
    assert_false(r->size_bug); /* per-block shared memory, not the device's */
    assert_int_equal(r->verdict, OD_OOM_CAPACITY);
    od_advice h[10];
    assert_int_equal(od_advice_for_report(r, h, 10), 1);
    assert_int_equal(h[0], OD_ADV_KERNEL_SMEM);
    od_triage_free(t);
    t = parse_str("[2025-07-02 07:41:59 DP0 TP0] max_total_tokens=131072 is larger than the profiled value -561981. "
                  "Use the profiled value instead.\n");
    r = &t->reports[0];
    assert_int_equal(r->kind, OD_KIND_ENGINE_KV);
    assert_string_equal(r->library, "sglang");
    assert_int_equal(r->verdict, OD_OOM_CAP_LIMIT);
    assert_int_equal(place_of(r, OD_ADV_ENGINE_KV), 0);
    od_triage_free(t);
    /* a positive profiled value only trims the cache: no report */
    od_triage *none = NULL;
    od_error err;
    const char *ok = "max_total_tokens=131072 is larger than the profiled value 61981. Use the profiled value.\n";
    assert_int_equal(od_triage_parse(ok, strlen(ok), &none, &err), OD_OK);
    assert_int_equal(none->n_reports, 0);
    od_triage_free(none);
}

static void fraction_setting(void **state)
{
    (void)state;
    /* real/149: Paddle under FLAGS_fraction_of_gpu_memory_to_use 0.50 */
    od_triage *t = parse_str("Out of memory error on GPU 0. Cannot allocate 25.000244MB memory on GPU 0, available "
                             "memory is only 2.349999MB.\n\nPlease check whether there is any other process using "
                             "GPU 0.\n   2) FLAGS_fraction_of_gpu_memory_to_use is 0.50 now, please set it to a higher "
                             "value but less than 1.0.\n");
    const od_oom_report *r = &t->reports[0];
    assert_string_equal(r->library, "paddle");
    assert_int_equal(r->fraction_permille, 500);
    assert_int_equal(r->verdict, OD_OOM_CAP_LIMIT);
    assert_int_equal(place_of(r, OD_ADV_RAISE_SETTING), 0);
    assert_int_equal(place_of(r, OD_ADV_RAISE_FRACTION), -1); /* PyTorch's setting is not Paddle's */
    assert_non_null(strstr(od_advice_meaning(r), "PaddlePaddle"));
    od_triage_free(t);
}

static void runtimes_say_who_spoke(void **state)
{
    (void)state;
    static const struct { const char *text, *library, *says; } cases[] = {
        {"ggml_backend_cuda_buffer_type_alloc_buffer: allocating 4096.00 MiB on device 0: cudaMalloc failed: out of "
         "memory\nllama_model_load: error loading model\n", "ggml", "ggml"},
        {"RuntimeError: CUDA failed with error out of memory\n", "ctranslate2", "CTranslate2"},
        {"RuntimeError: Could not allocate tensor with 234881024 bytes. There is not enough GPU video memory "
         "available!\n", "directml", "DirectX"},
        {"cupy.cuda.memory.OutOfMemoryError: Out of memory allocating 25,600,000 bytes (allocated so far: "
         "3,635,267,072 bytes).\n", "cupy", "CuPy"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        od_triage *t = parse_str(cases[i].text);
        const od_oom_report *r = &t->reports[0];
        assert_int_equal(r->framework, OD_FW_OTHER);
        assert_string_equal(r->library, cases[i].library);
        assert_non_null(strstr(od_advice_meaning(r), cases[i].says));
        assert_true(place_of(r, OD_ADV_RUNTIME_LIMITS) >= 0);
        assert_int_equal(place_of(r, OD_ADV_SHRINK_STEP), -1); /* PyTorch's remedies are not theirs */
        od_triage_free(t);
    }
    /* every advice row has its three parts */
    for (int a = 0; a < OD_ADV_COUNT; a++) {
        assert_non_null(od_advice_get((od_advice)a)->action);
        assert_non_null(od_advice_get((od_advice)a)->effect);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(thc_era),
        cmocka_unit_test(kernel_and_engine_kinds),
        cmocka_unit_test(fraction_setting),
        cmocka_unit_test(runtimes_say_who_spoke),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
