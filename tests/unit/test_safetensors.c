/* test_safetensors.c - safetensors headers on the tiny checkpoints of
 * tests/data/safetensors (written by its make_fixtures.py): exact parameter counts and
 * weight bytes, dense, sharded, GPTQ and bitsandbytes NF4, and one clear error per kind of
 * broken file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "read/hfconfig.h"
#include "read/safetensors.h"
#include "slurp.h"

#define DIR "tests/data/safetensors/"

/* The tiny Llama of make_fixtures.py: embed + lm_head 128x64 each, per layer q/o 64x64,
 * k/v 32x64, gate/up/down 128x64 (x2), two norms of 64, a final norm. */
static const uint64_t TINY_PARAMS = 2 * 128 * 64 + 2 * (2 * 4096 + 2 * 2048 + 3 * 8192 + 128) + 64;
static const uint64_t TINY_LINEAR = 2 * (2 * 4096 + 2 * 2048 + 3 * 8192);

/* Add path's header to *t; the status of either step, err filled. */
static od_status add_file(const char *path, unsigned bits, od_safetensors_totals *t, od_error *err)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    uint64_t size = (uint64_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t prefix[8] = {0};
    size_t got = fread(prefix, 1, 8, f);
    uint64_t n;
    od_status st = od_safetensors_header_length(prefix, got < 8 ? got : size, &n, err);
    if (st == OD_OK) {
        char *h = malloc(n);
        assert_non_null(h);
        assert_int_equal(fread(h, 1, n, f), n);
        st = od_safetensors_add_header(h, n, size - 8 - n, bits, t, err);
        free(h);
    }
    fclose(f);
    return st;
}

/* The model of a checkpoint's config.json, asserting it parses. */
static void parse_config(const char *path, od_model *m)
{
    size_t len;
    char *buf = slurp(path, &len);
    od_error err;
    assert_int_equal(od_hfconfig_parse(buf, len, m, &err), OD_OK);
    free(buf);
}

static void test_dense_and_sharded(void **state)
{
    (void)state;
    od_safetensors_totals t;
    od_error err;
    memset(&t, 0, sizeof t);
    assert_int_equal(add_file(DIR "tiny-llama/model.safetensors", 0, &t, &err), OD_OK);
    assert_int_equal(t.files, 1);
    assert_int_equal(t.tensors, 21);
    assert_int_equal(t.params, TINY_PARAMS);
    assert_int_equal(t.weight_bytes, 2 * TINY_PARAMS); /* bf16 */
    assert_int_equal(t.packed_params, 0);
    assert_string_equal(t.quant, "");
    assert_int_equal(t.largest_tensor_bytes, 2 * 128 * 64);
    od_safetensors_totals s;
    memset(&s, 0, sizeof s);
    assert_int_equal(add_file(DIR "tiny-llama-sharded/model-00001-of-00002.safetensors", 0, &s, &err), OD_OK);
    assert_int_equal(add_file(DIR "tiny-llama-sharded/model-00002-of-00002.safetensors", 0, &s, &err), OD_OK);
    assert_int_equal(s.files, 2);
    assert_int_equal(s.params, t.params);
    assert_int_equal(s.weight_bytes, t.weight_bytes);

    /* The config's layout counts what the checkpoint holds. */
    od_model m;
    parse_config(DIR "tiny-llama/config.json", &m);
    od_param_counts pc;
    od_model_count(&m, &pc);
    assert_int_equal(pc.total, t.params);
    assert_int_equal(m.quant_bits, 0);
}

static void test_quantized(void **state)
{
    (void)state;
    od_safetensors_totals t;
    od_error err;
    /* GPTQ 4-bit, groups of 32: qweight in/8 x out int32, qzeros in/32 x out/8 int32,
     * scales in/32 x out fp16, g_idx in int32; embeddings, norms, lm_head fp16. */
    memset(&t, 0, sizeof t);
    assert_int_equal(add_file(DIR "tiny-gptq/model.safetensors", 4, &t, &err), OD_OK);
    assert_string_equal(t.quant, "gptq/awq");
    assert_int_equal(t.params, TINY_PARAMS);
    assert_int_equal(t.packed_params, TINY_LINEAR);
    uint64_t rest = TINY_PARAMS - TINY_LINEAR;
    /* sum over the linears of in*out/32*(4/8 + 2) + in*4 */
    uint64_t meta = 0, ins = 0;
    static const uint64_t lin[][2] = {{64, 64}, {32, 64}, {32, 64}, {64, 64},
                                      {128, 64}, {128, 64}, {64, 128}};
    for (int l = 0; l < 2; l++)
        for (int i = 0; i < 7; i++) {
            uint64_t o = lin[i][0], in = lin[i][1];
            meta += in / 32 * o / 8 * 4 + in / 32 * o * 2 + in * 4;
            ins += in * o;
        }
    assert_int_equal(ins, TINY_LINEAR);
    assert_int_equal(t.quant_meta_bytes, meta);
    assert_int_equal(t.weight_bytes, 2 * rest + TINY_LINEAR / 2 + meta);
    /* 8-bit packing: the same int32s hold 4 values each */
    od_safetensors_totals t8;
    memset(&t8, 0, sizeof t8);
    assert_int_equal(add_file(DIR "tiny-gptq/model.safetensors", 8, &t8, &err), OD_OK);
    assert_int_equal(t8.packed_params, TINY_LINEAR / 2);

    /* bitsandbytes NF4 with double quantization: uint8 weights, two values a byte. */
    memset(&t, 0, sizeof t);
    assert_int_equal(add_file(DIR "tiny-nf4/model.safetensors", 4, &t, &err), OD_OK);
    assert_string_equal(t.quant, "bnb-nf4");
    assert_int_equal(t.params, TINY_PARAMS);
    assert_int_equal(t.packed_params, TINY_LINEAR);
    assert_int_equal(t.weight_bytes - t.quant_meta_bytes, 2 * rest + TINY_LINEAR / 2);

    od_model m;
    parse_config(DIR "tiny-gptq/config.json", &m);
    assert_int_equal(m.quant_bits, 4);
}

static void test_errors(void **state)
{
    (void)state;
    od_safetensors_totals t, before;
    od_error err;
    memset(&t, 0, sizeof t);
    before = t;
    assert_int_equal(add_file(DIR "bad/absurd_length.safetensors", 0, &t, &err), OD_ERR_LIMIT);
    assert_true(err.has_offset);
    assert_int_equal(err.offset, 0);
    assert_non_null(strstr(err.msg, "absurd"));
    assert_int_equal(add_file(DIR "bad/short.safetensors", 0, &t, &err), OD_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "8-byte"));
    assert_int_equal(add_file(DIR "bad/truncated.safetensors", 0, &t, &err), OD_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "past the data"));
    assert_int_equal(err.offset, 9); /* the tensor's name, just after "{" */
    assert_int_equal(add_file(DIR "bad/bad_dtype.safetensors", 0, &t, &err), OD_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "Q77"));
    assert_int_equal(add_file(DIR "bad/not_json.safetensors", 0, &t, &err), OD_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "not JSON"));
    assert_memory_equal(&t, &before, sizeof t); /* unchanged on failure */

    /* Headers written by hand: a span that disagrees with dtype x shape, a negative size,
     * a header length past the file. */
    const char *span = "{\"w\":{\"dtype\":\"F16\",\"shape\":[2,3],\"data_offsets\":[0,8]}}";
    assert_int_equal(od_safetensors_add_header(span, strlen(span), 100, 0, &t, &err), OD_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "need 12"));
    const char *neg = "{\"w\":{\"dtype\":\"F16\",\"shape\":[-2],\"data_offsets\":[0,0]}}";
    assert_int_equal(od_safetensors_add_header(neg, strlen(neg), 100, 0, &t, &err), OD_ERR_FORMAT);
    const char *overlap = "{\"a\":{\"dtype\":\"U8\",\"shape\":[8],\"data_offsets\":[0,8]},"
                          "\"b\":{\"dtype\":\"U8\",\"shape\":[8],\"data_offsets\":[0,8]}}";
    assert_int_equal(od_safetensors_add_header(overlap, strlen(overlap), 8, 0, &t, &err), OD_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "overlap"));
    const uint8_t big[8] = {0x20, 0, 0, 0, 0, 0, 0, 0};
    uint64_t n;
    assert_int_equal(od_safetensors_header_length(big, 20, &n, &err), OD_ERR_FORMAT);
    assert_int_equal(od_safetensors_header_length(big, 40, &n, &err), OD_OK);
    assert_int_equal(n, 32);
    assert_memory_equal(&t, &before, sizeof t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dense_and_sharded),
        cmocka_unit_test(test_quantized),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
