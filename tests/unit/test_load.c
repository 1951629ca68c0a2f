/* test_load.c - the one loader (read/load.h) on a real file of each kind: what it decides
 * and what it holds, from a file and from a stream that cannot be opened again (a BFC log
 * from a pipe is held and read twice; from a file, read again through the reopener). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "read/load.h"

static int reopened;
static FILE *again_file;

static od_input *reopen(void *ctx, od_error *err)
{
    od_input *in = NULL;
    reopened++;
    FILE *f = fopen(ctx, "rb");
    if (!f || od_input_open_file(f, &in, err) != OD_OK) {
        if (f)
            fclose(f);
        return NULL;
    }
    again_file = f;
    return in;
}

static void reclose(void *ctx, od_input *in)
{
    (void)ctx;
    od_input_close(in);
    if (again_file)
        fclose(again_file);
    again_file = NULL;
}

/* Load path, from the file (with a reopener) or from its bytes in memory (without). */
static od_status load(const char *path, int from_memory, od_loaded *l, od_error *err)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    od_input *in = NULL;
    char *buf = NULL;
    od_status st;
    if (from_memory) {
        fseek(f, 0, SEEK_END);
        long n = ftell(f);
        rewind(f);
        buf = malloc((size_t)n + 1);
        assert_true(fread(buf, 1, (size_t)n, f) == (size_t)n);
        st = od_input_open_memory(buf, (size_t)n, &in, err);
    } else {
        st = od_input_open_file(f, &in, err);
    }
    assert_int_equal(st, OD_OK);
    od_reopener again = {reopen, reclose, (void *)path};
    memset(l, 0, sizeof *l);
    l->name = path;
    st = od_load(in, from_memory ? NULL : &again, l, err);
    od_input_close(in);
    fclose(f);
    free(buf);
    return st;
}

static void kinds(void **state)
{
    (void)state;
    static const struct {
        const char *path;
        od_input_kind kind;
    } cases[] = {
        {"tests/data/snapshots/frag_default.pickle", OD_INPUT_SNAPSHOT},
        {"tests/data/snapshots/snap_infer_llama.pickle.gz", OD_INPUT_SNAPSHOT},
        {"examples/configs/llama-160m.json", OD_INPUT_CONFIG},
        {"tests/data/extracted/leak_eval_no_grad_steps.csv", OD_INPUT_SERIES},
        {"tests/data/extracted/train_oom_log.txt", OD_INPUT_LOG},
        {"tests/data/profiler/torch_memory_timeline.json", OD_INPUT_PROFILE},
        {"tests/data/profiler/torch_profiler_trace.json.gz", OD_INPUT_PROFILE},
        {"Makefile", OD_INPUT_NOTHING},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int mem = 0; mem < 2; mem++) {
            od_loaded l;
            od_error err;
            assert_int_equal(load(cases[i].path, mem, &l, &err), OD_OK);
            if (l.kind != cases[i].kind)
                fail_msg("%s: %s, expected %s", cases[i].path, od_input_kind_name(l.kind),
                         od_input_kind_name(cases[i].kind));
            switch (l.kind) {
            case OD_INPUT_SNAPSHOT: assert_non_null(l.snapshot); break;
            case OD_INPUT_CONFIG: assert_true(l.have_model && l.model.layers == 12); break;
            case OD_INPUT_SERIES: assert_true(l.series && l.have_fit && l.fit.verdict == OD_TREND_LEAK); break;
            case OD_INPUT_LOG: assert_true(l.triage && l.triage->n_reports > 0); break;
            case OD_INPUT_PROFILE: assert_non_null(l.profile); break;
            case OD_INPUT_NOTHING: assert_true(!l.triage && !l.series && l.series_error.status != OD_OK); break;
            }
            assert_string_equal(l.name, cases[i].path);
            od_loaded_free(&l);
        }
}

/* A BFC allocator log with an OOM line: a log, whose allocator figures are a profile too;
 * from a file read a second time through the reopener, from memory without one. */
static void bfc_log_two_passes(void **state)
{
    (void)state;
    for (int mem = 0; mem < 2; mem++) {
        od_loaded l;
        od_error err;
        reopened = 0;
        assert_int_equal(load("tests/data/profiler/jax_bfc.log", mem, &l, &err), OD_OK);
        assert_int_equal(l.file_kind, OD_FILE_BFC_LOG);
        assert_non_null(l.profile);
        assert_int_equal(reopened, mem ? 0 : 1);
        od_loaded_free(&l);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(kinds),
        cmocka_unit_test(bfc_log_two_passes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
