/* test_gguf.c - GGUF headers: the tiny Llama of tests/data/gguf (make_fixtures.py writes it
 * from the format) read to its tensors' exact bytes without reading the data, its metadata
 * as a config the llama family reads, and one clear error per malformed header. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include "slurp.h"

#include "read/gguf.h"
#include "read/hfconfig.h"

static od_status parse_file(const char *path, od_gguf *g, od_error *err)
{
    size_t len;
    char *t = slurp(path, &len);
    od_status st = od_gguf_parse((const uint8_t *)t, len, len, g, err);
    free(t);
    return st;
}

static void test_tiny_llama(void **state)
{
    (void)state;
    od_gguf *g = malloc(sizeof *g);
    od_error err;
    assert_int_equal(parse_file("tests/data/gguf/tiny-llama.gguf", g, &err), OD_OK);
    assert_int_equal(g->need_bytes, 0);
    assert_int_equal(g->version, 3);
    assert_int_equal(g->n_tensors, 21);
    assert_string_equal(g->architecture, "llama");
    assert_string_equal(g->name, "tiny-llama");
    /* h 64, kv 32, ffn 128, vocab 128, 2 layers: Q8_0 embedding 8192 values = 256 blocks of
     * 34 bytes; per layer q, o 4096 and k 2048 values in Q4_0 (18 bytes a 32), v 2048 and
     * down 8192 in Q6_K (210 a 256), gate and up 8192 in Q4_K (144 a 256), two F32 norms;
     * an F32 final norm and a Q6_K output of 8192 */
    uint64_t per_layer = (4096 + 2048 + 4096) / 32 * 18 + (2048 + 8192) / 256 * 210 + 2 * 8192 / 256 * 144 + 2 * 64 * 4;
    uint64_t bytes = 8192 / 32 * 34 + 2 * per_layer + 64 * 4 + 8192 / 256 * 210;
    assert_int_equal(g->totals.weight_bytes, bytes);
    assert_int_equal(g->totals.params, 8192 + 2 * (4096 * 2 + 2048 * 2 + 8192 * 3 + 128) + 64 + 8192);
    assert_int_equal(g->totals.tensors, 21);
    assert_string_equal(g->totals.format, "gguf");
    assert_string_equal(g->totals.quant, "Q4_K"); /* the most values: gate and up, 4 x 8192 */
    size_t q4k = 0;
    for (size_t i = 0; i < g->n_types; i++)
        if (!strcmp(g->types[i].type, "Q4_K"))
            q4k = i + 1;
    assert_true(q4k);
    assert_int_equal(g->types[q4k - 1].tensors, 4);
    assert_int_equal(g->types[q4k - 1].bytes, 4 * 8192 / 256 * 144);
    /* the metadata reads as a Llama config: the same parameters as the tensors hold */
    od_model m;
    assert_int_equal(od_hfconfig_parse(g->config, strlen(g->config), &m, &err), OD_OK);
    assert_string_equal(m.model_type, "llama");
    assert_true(m.hidden == 64 && m.layers == 2 && m.heads == 2 && m.kv_heads == 1 && m.vocab == 128);
    assert_int_equal(m.max_positions, 2048);
    assert_false(m.tied_embeddings); /* output.weight is there */
    od_param_counts pc;
    od_model_count(&m, &pc);
    assert_int_equal(pc.total, g->totals.params);
    /* a prefix of the header: asks for more, fills nothing else */
    size_t len;
    char *t = slurp("tests/data/gguf/tiny-llama.gguf", &len);
    assert_int_equal(od_gguf_parse((const uint8_t *)t, 100, len, g, &err), OD_OK);
    assert_true(g->need_bytes > 100 && g->need_bytes <= len);
    assert_int_equal(g->n_tensors, 0);
    free(t);
    free(g);
}

static void test_bad_headers(void **state)
{
    (void)state;
    static const struct { const char *file, *words; uint64_t offset; } C[] = {
        {"magic.gguf", "no \"GGUF\" magic", 0},
        {"version.gguf", "GGUF version 7", 4},
        {"truncated.gguf", "truncated", 598},
        {"short-data.gguf", "output.weight", 3060},
        {"no-sizes.gguf", "block_count", 24},
    };
    od_gguf *g = malloc(sizeof *g);
    for (size_t i = 0; i < sizeof C / sizeof C[0]; i++) {
        char path[128];
        snprintf(path, sizeof path, "tests/data/gguf/bad/%s", C[i].file);
        od_error err;
        assert_int_equal(parse_file(path, g, &err), OD_ERR_FORMAT);
        if (!strstr(err.msg, C[i].words) || !err.has_offset || err.offset != C[i].offset)
            fail_msg("%s: %s (offset %llu)", C[i].file, err.msg, (unsigned long long)err.offset);
    }
    free(g);
    assert_string_equal(od_gguf_type_name(12), "Q4_K");
    assert_null(od_gguf_type_name(4)); /* Q4_2, removed from ggml */
    assert_null(od_gguf_type_name(1000));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tiny_llama),
        cmocka_unit_test(test_bad_headers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
