/* test_inputkind.c - what kind of input a file is, on the real files of tests/data (read
 * as the commands read them: gunzipped, the gzip flag remembered), their first bytes, and
 * inputs on which doctor's and report's former orders disagreed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oomdoc/input.h"
#include "read/inputkind.h"
#include "read/profile.h"
#include "read/trend.h"
#include "read/triage/triage.h"

/* The whole of path, gunzipped, NUL-terminated; *flags gets OD_DETECT_GZIP when it was
 * gzip-compressed. */
static char *read_decoded(const char *path, size_t *len, unsigned *flags)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    od_input *in = NULL;
    od_error err;
    assert_int_equal(od_input_open_file(f, &in, &err), OD_OK);
    size_t cap = 1 << 16, n = 0, got;
    char *buf = malloc(cap + 1);
    assert_non_null(buf);
    while ((got = od_input_read(in, buf + n, cap - n)) > 0) {
        n += got;
        if (n == cap) {
            buf = realloc(buf, (cap *= 2) + 1);
            assert_non_null(buf);
        }
    }
    assert_int_equal(od_input_error(in, &err), OD_OK);
    *flags = od_input_is_gzip(in) ? OD_DETECT_GZIP : 0;
    od_input_close(in);
    fclose(f);
    buf[n] = '\0';
    *len = n;
    return buf;
}

static od_file_kind detect(const char *text, size_t len, unsigned flags)
{
    od_file_kind k = (od_file_kind)-1;
    od_error err;
    assert_int_equal(od_file_kind_detect(text, len, flags, &k, &err), OD_OK);
    return k;
}

/* The kind of the whole file, and of its first OD_FILE_HEAD_BYTES alone. */
static void expect_file(const char *path, od_file_kind whole, od_file_kind head)
{
    size_t len;
    unsigned flags;
    char *text = read_decoded(path, &len, &flags);
    print_message("%s\n", path);
    assert_int_equal(detect(text, len, flags), whole);
    size_t h = len < OD_FILE_HEAD_BYTES ? len : OD_FILE_HEAD_BYTES;
    assert_int_equal(detect(text, h, flags | OD_DETECT_HEAD), head);
    free(text);
}

static void snapshots(void **state)
{
    (void)state;
    expect_file("tests/data/snapshots/frag_default.pickle", OD_FILE_SNAPSHOT, OD_FILE_SNAPSHOT);
    expect_file("tests/data/snapshots/snap_train_oom.pickle", OD_FILE_SNAPSHOT, OD_FILE_SNAPSHOT);
    expect_file("tests/data/snapshots/snap_train_long.pickle.gz", OD_FILE_SNAPSHOT_GZIP, OD_FILE_SNAPSHOT_GZIP);
    expect_file("tests/data/snapshots/snap_infer_llama.pickle.gz", OD_FILE_SNAPSHOT_GZIP, OD_FILE_SNAPSHOT_GZIP);
    /* a pickle the snapshot reader refuses is still a snapshot: its reader says why */
    expect_file("tests/data/bad/refuse_global.pickle", OD_FILE_SNAPSHOT, OD_FILE_SNAPSHOT);
}

static void configs(void **state)
{
    (void)state;
    expect_file("tests/data/configs/llama-2-7b.json", OD_FILE_CONFIG, OD_FILE_UNDECIDED);
    expect_file("tests/data/configs/pythia-160m.json", OD_FILE_CONFIG, OD_FILE_UNDECIDED);
    expect_file("tests/data/extracted/snap_train_default_config.json", OD_FILE_CONFIG, OD_FILE_UNDECIDED);
    /* the planner cannot read it, but it is a config */
    expect_file("tests/data/configs/bad/unknown_type.json", OD_FILE_CONFIG, OD_FILE_UNDECIDED);
}

static void profiles(void **state)
{
    (void)state;
    expect_file("tests/data/profiler/torch_profiler_trace.json.gz", OD_FILE_TORCH_TRACE, OD_FILE_TORCH_TRACE);
    expect_file("tests/data/profiler/torch_memory_timeline.json", OD_FILE_TORCH_TIMELINE, OD_FILE_TORCH_TIMELINE);
    expect_file("tests/data/profiler/torch_key_averages.txt", OD_FILE_TORCH_TABLE, OD_FILE_TORCH_TABLE);
    expect_file("tests/data/profiler/jax_device_memory.prof", OD_FILE_JAX_PPROF, OD_FILE_JAX_PPROF);
    expect_file("tests/data/profiler/jax_memory_stats.json", OD_FILE_JAX_STATS, OD_FILE_JAX_STATS);
    expect_file("tests/data/profiler/jax_bfc.log", OD_FILE_BFC_LOG, OD_FILE_BFC_LOG);
    /* TensorFlow's OOM as its BFC allocator logs it */
    expect_file("tests/data/messages/tensorflow.txt", OD_FILE_BFC_LOG, OD_FILE_BFC_LOG);
    assert_int_equal(od_file_kind_profile(OD_FILE_TORCH_TRACE), OD_PROFILE_TORCH_TRACE);
    assert_int_equal(od_file_kind_profile(OD_FILE_TORCH_TIMELINE), OD_PROFILE_TORCH_TIMELINE);
    assert_int_equal(od_file_kind_profile(OD_FILE_TORCH_TABLE), OD_PROFILE_TORCH_TABLE);
    assert_int_equal(od_file_kind_profile(OD_FILE_JAX_PPROF), OD_PROFILE_JAX_PPROF);
    assert_int_equal(od_file_kind_profile(OD_FILE_JAX_STATS), OD_PROFILE_JAX_STATS);
    assert_int_equal(od_file_kind_profile(OD_FILE_BFC_LOG), OD_PROFILE_BFC_LOG);
    static const od_file_kind others[] = {OD_FILE_NOTHING, OD_FILE_SNAPSHOT, OD_FILE_SNAPSHOT_GZIP, OD_FILE_CONFIG,
                                          OD_FILE_SERIES, OD_FILE_LOG, OD_FILE_UNDECIDED};
    for (size_t i = 0; i < sizeof others / sizeof *others; i++)
        assert_int_equal(od_file_kind_profile(others[i]), -1);
}

static void series(void **state)
{
    (void)state;
    expect_file("tests/data/extracted/leak_eval_no_grad_steps.csv", OD_FILE_SERIES, OD_FILE_UNDECIDED);
    expect_file("tests/data/extracted/leak_eval_no_grad_steps.jsonl", OD_FILE_SERIES, OD_FILE_UNDECIDED);
    expect_file("tests/data/extracted/leak_eval_no_grad_nvml.csv", OD_FILE_SERIES, OD_FILE_UNDECIDED);
    expect_file("tests/data/extracted/snap_train_long_steps.jsonl", OD_FILE_SERIES, OD_FILE_UNDECIDED);
}

static void logs(void **state)
{
    (void)state;
    expect_file("tests/data/extracted/train_oom_log.txt", OD_FILE_LOG, OD_FILE_UNDECIDED);
    expect_file("tests/data/messages/torch21_capacity.txt", OD_FILE_LOG, OD_FILE_UNDECIDED);
    expect_file("tests/data/messages/jax.txt", OD_FILE_LOG, OD_FILE_UNDECIDED);
    /* memory_summary(), memory_stats() as JSON, nvidia-smi in its three forms */
    expect_file("tests/data/extracted/snap_train_oom_summary.txt", OD_FILE_LOG, OD_FILE_UNDECIDED);
    expect_file("tests/data/extracted/snap_train_default_memory_stats.json", OD_FILE_LOG, OD_FILE_UNDECIDED);
    expect_file("tests/data/measured/nvidia-smi.txt", OD_FILE_LOG, OD_FILE_UNDECIDED);
    expect_file("tests/data/measured/nvidia-smi-q-memory.txt", OD_FILE_LOG, OD_FILE_UNDECIDED);
    expect_file("tests/data/measured/nvidia-smi-query.csv", OD_FILE_LOG, OD_FILE_UNDECIDED);
}

static void nothing(void **state)
{
    (void)state;
    /* prose with no report in it (the messages' README now quotes their wordings) */
    expect_file("LICENSE", OD_FILE_NOTHING, OD_FILE_UNDECIDED);
    expect_file("tests/data/measured/train.json", OD_FILE_NOTHING, OD_FILE_UNDECIDED);
    assert_int_equal(detect("", 0, 0), OD_FILE_NOTHING);
    assert_int_equal(detect("hello\n", 6, 0), OD_FILE_NOTHING);
    /* PROTO alone, without its protocol byte, is no pickle (report used to take it for one) */
    assert_int_equal(detect("\x80", 1, 0), OD_FILE_NOTHING);
}

/* A JSON Lines step log (the leak fixture's rows) whose last row carries the OOM message
 * the run died with (torch21_capacity.txt) in a field. doctor read such a file as a log
 * (triage first), report as a series (series first); it is a series: its structure is
 * a step log, the message is one field of it. */
static void step_log_with_an_oom_message_is_a_series(void **state)
{
    (void)state;
    size_t nrows, nmsg;
    unsigned flags;
    char *rows = read_decoded("tests/data/extracted/leak_eval_no_grad_steps.jsonl", &nrows, &flags);
    char *msg = read_decoded("tests/data/messages/torch21_capacity.txt", &nmsg, &flags);
    while (nmsg && (msg[nmsg - 1] == '\n' || msg[nmsg - 1] == '\r'))
        msg[--nmsg] = '\0';
    assert_null(strchr(msg, '"'));
    assert_null(strchr(msg, '\n'));
    size_t cap = nrows + nmsg + 256;
    char *text = malloc(cap);
    assert_non_null(text);
    int n = snprintf(text, cap, "%s{\"step\": 99, \"allocated_bytes\": 17000000000, \"error\": \"%s\"}\n", rows, msg);
    assert_true(n > 0 && (size_t)n < cap);
    size_t len = (size_t)n;

    /* both readers accept it: the orders really disagree here */
    od_triage *t = NULL;
    od_series *s = NULL;
    od_error err;
    assert_int_equal(od_triage_parse(text, len, &t, &err), OD_OK);
    assert_int_equal(t->n_reports, 1);
    assert_int_equal(od_series_parse(text, len, &s, &err), OD_OK);
    od_triage_free(t);
    od_series_free(s);

    assert_int_equal(detect(text, len, 0), OD_FILE_SERIES);
    free(text);
    free(rows);
    free(msg);
}

/* A profiler record that carries an OOM message is a profile, and a BFC allocator log
 * (a profile kind that is also a log) keeps its kind without its OOM line: doctor read
 * such a log as nothing and report as a profile; the commands now agree on it. */
static void structured_kinds_win_over_the_message(void **state)
{
    (void)state;
    size_t nmsg, nbfc;
    unsigned flags;
    char *msg = read_decoded("tests/data/messages/torch21_capacity.txt", &nmsg, &flags);
    char *bfc = read_decoded("tests/data/profiler/jax_bfc.log", &nbfc, &flags);
    char text[8192];
    int n = snprintf(text, sizeof text, "[[0, 1000], [[0, 1, 2, 3, 4, 5, 6, 7, 8]]]\n%s", msg);
    assert_true(n > 0 && (size_t)n < sizeof text);
    assert_int_equal(detect(text, (size_t)n, 0), OD_FILE_TORCH_TIMELINE);
    /* the BFC log without its lines that name an OOM: still the allocator's log */
    char *cut = strstr(bfc, "Current allocation summary follows");
    assert_non_null(cut);
    od_triage *t = NULL;
    od_error err;
    assert_int_equal(od_triage_parse(cut, strlen(cut), &t, &err), OD_OK);
    assert_int_equal(t->n_reports, 0);
    od_triage_free(t);
    assert_int_equal(detect(cut, strlen(cut), 0), OD_FILE_BFC_LOG);
    free(msg);
    free(bfc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(snapshots),
        cmocka_unit_test(configs),
        cmocka_unit_test(profiles),
        cmocka_unit_test(series),
        cmocka_unit_test(logs),
        cmocka_unit_test(nothing),
        cmocka_unit_test(step_log_with_an_oom_message_is_a_series),
        cmocka_unit_test(structured_kinds_win_over_the_message),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
