/* test_triage_rules.c - the tables of rules.def and contexts.def as data: every phrase can be
 * keyed, every row reads its own example line (a real line, found in a fixture), twelve copies
 * of a wording make one report seen twelve times (the one folding rule), the stream keeps each
 * example line in a long log, and ordinary log lines are never kept. */
#include <ctype.h>
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>
#include "slurp.h"

#include "read/triage/scan.h"

/* Rows whose example is not in a fixture yet, and why (the wording came with the code). */
static const char *const no_fixture[] = {
    "CUDNN_WORKSPACE", "HOST_NUMPY", "HOST_ENOMEM", "K8S_OOMKILLED", "ORT_AVAILABLE", "MXNET_RETRY",
    "CUDA_FAILURE_2", "CUDNN_NO_ALGORITHM", "TF_STATS_LIMIT", "TF_STATS_INUSE", "HOST_MEMORYERROR",
};

/* Each phrase of a '|' list, its markers off: at least three letters to key it by. */
static void check_list(const char *what, const char *list, unsigned max)
{
    unsigned n = 0;
    for (const char *p = list; *p;) {
        const char *e = strchr(p, '|');
        if (!e)
            e = p + strlen(p);
        unsigned letters = 0;
        for (const char *q = p; q < e; q++)
            letters += *q != ' ' && *q != '=' && *q != '^' && *q != '*';
        if (letters < 3)
            fail_msg("%s: phrase \"%.*s\" has fewer than three letters to key it by", what, (int)(e - p), p);
        n++;
        p = *e ? e + 1 : e;
    }
    if (n > max)
        fail_msg("%s: %u phrases, at most %u", what, n, max);
}

static void phrases_can_be_keyed(void **state)
{
    (void)state;
    for (size_t k = 0; k < OD_N_RULES; k++) {
        const od_tr_rule *r = &od_tr_rules[k];
        if (!*r->any)
            fail_msg("%s: no phrase", r->name);
        check_list(r->name, r->any, 32);
        check_list(r->name, r->all, 8);
        check_list(r->name, r->not_, 32);
    }
    for (size_t c = 0; c < OD_N_CONTEXTS; c++)
        check_list(od_tr_contexts[c].phrase, od_tr_contexts[c].phrase, 1);
    for (size_t i = 0; i < OD_N_READERS; i++)
        check_list(od_tr_readers[i], od_tr_readers[i], 1);
}

/* The first row (in table order) that reads line. */
static size_t reader_of(const od_tr_index *ix, const char *line)
{
    od_tr_hits h;
    od_tr_hits_of(ix, line, line, line + strlen(line), &h);
    for (size_t k = 0; k < OD_N_RULES; k++)
        if (od_tr_rule_reads(&h, k))
            return k;
    return OD_N_RULES;
}

static void each_row_reads_its_example(void **state)
{
    (void)state;
    od_tr_index *ix = od_tr_index_new();
    assert_non_null(ix);
    for (size_t k = 0; k < OD_N_RULES; k++) {
        size_t got = reader_of(ix, od_tr_rules[k].example);
        if (got != k)
            fail_msg("%s: its example is read by %s", od_tr_rules[k].name,
                     got < OD_N_RULES ? od_tr_rules[got].name : "no row");
    }
    /* one letter off, the row does not read it (the phrase is not a substring search) */
    assert_int_not_equal(reader_of(ix, "room for 8 GiB"), OD_RULE_GENERIC);
    assert_int_not_equal(reader_of(ix, "num_ooms: 2, CUDA OOMs: 1"), OD_RULE_GENERIC);
    assert_int_equal(reader_of(ix, "RuntimeError: cuda out of memory. tried to allocate 2.00 gib"), OD_RULE_TORCH_CUDA);
    assert_int_equal(reader_of(ix, "RuntimeError: CUDA  out  of\tmemory"), OD_RULE_TORCH_CUDA);
    assert_int_equal(reader_of(ix, "RuntimeError:CUDA error:out of memory"), OD_RULE_TORCH_DRIVER);
    assert_int_equal(reader_of(ix, "failed (exitcode: -9) local_rank: 0"), OD_RULE_TORCHRUN_EXIT9);
    assert_int_equal(reader_of(ix, "failed (exitcode: -90) local_rank: 0"), OD_N_RULES);
    assert_int_equal(reader_of(ix, "epoch 3 step 1200 loss 0.4321 lr=3.0e-9 grad_norm 0.87"), OD_N_RULES);
    od_tr_index_free(ix);
}

/* Does any fixture under dir (one level of folders) hold text? */
static int in_fixtures(const char *dir, const char *text)
{
    DIR *d = opendir(dir);
    int found = 0;
    struct dirent *e;
    while (d && !found && (e = readdir(d)) != NULL) {
        char path[1024];
        size_t n = strlen(e->d_name);
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (n > 4 && !strcmp(e->d_name + n - 4, ".txt")) {
            size_t len;
            char *b = slurp(path, &len);
            /* the example where it begins a word of the fixture */
            for (const char *q = b; b && !found && (q = strstr(q, text)) != NULL; q++)
                found = q == b || !isalnum((unsigned char)q[-1]);
            free(b);
        } else if (e->d_name[0] != '.' && !strcmp(e->d_name, "real")) {
            found = in_fixtures(path, text);
        }
    }
    if (d)
        closedir(d);
    return found;
}

static void examples_are_real_lines(void **state)
{
    (void)state;
    for (size_t k = 0; k < OD_N_RULES; k++) {
        int excused = 0;
        for (size_t i = 0; i < sizeof no_fixture / sizeof no_fixture[0]; i++)
            excused |= !strcmp(no_fixture[i], od_tr_rules[k].name);
        int found = in_fixtures("tests/data/messages", od_tr_rules[k].example);
        if (!found && !excused)
            fail_msg("%s: its example is in no fixture under tests/data/messages", od_tr_rules[k].name);
        if (found && excused)
            fail_msg("%s: its example is in a fixture now: take it off no_fixture[]", od_tr_rules[k].name);
    }
}

/* Rows that make a report of their own line (the others extend an event, give a device's
 * figures, or read as no OOM). */
static int makes_reports(const od_tr_rule *r)
{
    return r->fold != OD_FOLD_ATTACH && r->fold != OD_FOLD_DEVICE && r->fold != OD_FOLD_IGNORE;
}

static void twelve_lines_one_report(void **state)
{
    (void)state;
    for (size_t k = 0; k < OD_N_RULES; k++) {
        const od_tr_rule *r = &od_tr_rules[k];
        if (!makes_reports(r))
            continue;
        char text[8192];
        size_t n = 0;
        for (int i = 0; i < 12; i++)
            n += (size_t)snprintf(text + n, sizeof text - n, "%s\n", r->example);
        assert_true(n < sizeof text);
        od_triage *t = NULL;
        od_error err;
        assert_int_equal(od_triage_parse(text, n, &t, &err), OD_OK);
        if (t->n_reports != 1)
            fail_msg("%s: twelve copies of its example make %zu reports", r->name, t->n_reports);
        else if (t->reports[0].occurrences != 12)
            fail_msg("%s: twelve copies of its example are seen %u times", r->name, t->reports[0].occurrences);
        od_triage_free(t);
    }
}

#define FILLER "2024-05-01 12:00:00,000 INFO [rank0] epoch 3 step 1200 loss 0.4321 lr=3.0e-9 tokens/s 12345\n"

/* The stream's anchors are the rows' phrases: each example, deep in a log, is kept and read as
 * the whole-text scan reads it. */
static void the_stream_keeps_each_wording(void **state)
{
    (void)state;
    for (size_t k = 0; k < OD_N_RULES; k++) {
        const od_tr_rule *r = &od_tr_rules[k];
        if (!makes_reports(r))
            continue;
        size_t cap = 1000 * sizeof FILLER + 4096, n = 0;
        char *text = malloc(cap);
        assert_non_null(text);
        for (int i = 0; i < 500; i++)
            n += (size_t)snprintf(text + n, cap - n, FILLER);
        n += (size_t)snprintf(text + n, cap - n, "%s\n", r->example);
        for (int i = 0; i < 490; i++)
            n += (size_t)snprintf(text + n, cap - n, FILLER);
        od_triage *s = NULL, *w = NULL;
        od_error err;
        assert_int_equal(od_triage_parse(text, n, &s, &err), OD_OK);
        assert_int_equal(od_triage_parse_whole(text, n, &w, &err), OD_OK);
        if (s->n_reports != 1 || w->n_reports != 1)
            fail_msg("%s: in a long log the stream finds %zu reports, the whole text %zu", r->name, s->n_reports,
                     w->n_reports);
        else if (s->reports[0].line != 501 || s->reports[0].framework != w->reports[0].framework ||
                 s->reports[0].have != w->reports[0].have)
            fail_msg("%s: the stream's report differs from the whole text's", r->name);
        od_triage_free(s);
        od_triage_free(w);
        free(text);
    }
}

/* Ordinary log lines ("lr=3.0e-9", ids with -9 in them, "exitcode: 0") are never kept: what
 * the stream holds stays a few buffers whatever the log's length. */
static void ordinary_lines_are_not_kept(void **state)
{
    (void)state;
    od_triage_stream *ts = NULL;
    od_error err;
    assert_int_equal(od_triage_stream_new(&ts, &err), OD_OK);
    static const char *const lines[] = {
        FILLER, "run 9f3a-9c1e-4d9b exitcode: 0 done in 19.9 s\n", "GPU 0 memory 41.2 GiB used, 38.0 GiB free\n",
        "[rank3] cuda:0 device torch.float16 step 4 of 9\n",
    };
    size_t most = 0;
    for (int i = 0; i < 200000; i++) {
        const char *l = lines[i % 4];
        assert_int_equal(od_triage_stream_feed(ts, l, strlen(l), &err), OD_OK);
        size_t h = od_triage_stream_held_bytes(ts);
        most = h > most ? h : most;
    }
    od_triage *t = NULL;
    assert_int_equal(od_triage_stream_finish(ts, &t, &err), OD_OK);
    assert_int_equal(t->n_reports, 0);
    if (most > (64u << 10))
        fail_msg("the stream held %zu bytes of an ordinary log", most);
    od_triage_free(t);
    od_triage_stream_free(ts);
}

/* A phrase a logger broke over two lines is read whole, at a space (a word wrap) or inside a
 * word (a fixed-width wrap), by the stream as by the whole-text scan, for every wording. */
static void wrapped_phrases(void **state)
{
    (void)state;
    static const struct { const char *text; od_framework fw; uint64_t requested; unsigned line; } cases[] = {
        {"x [3] include/alloc.h:185 NCCL WARN Failed to CUDA\n    calloc 6291456 bytes\n", OD_FW_NCCL, 6291456, 1},
        {"RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAI\nLED when calling `cublasCreate(handle)`\n", OD_FW_CUBLAS, 0,
         1},
        {"step 9\nOSError: [Errno 12] Cannot allocate\nmemory\n", OD_FW_HOST, 0, 2},
        {"Out of memory error on GPU 0. Cannot allocate 1.531250GB memory on GPU 0, available memory is only \n"
         "                   416.625000MB.\n", OD_FW_OTHER, 1644167168, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *text = cases[i].text;
        od_triage *s = NULL, *w = NULL;
        od_error err;
        assert_int_equal(od_triage_parse(text, strlen(text), &s, &err), OD_OK);
        assert_int_equal(od_triage_parse_whole(text, strlen(text), &w, &err), OD_OK);
        assert_int_equal(s->n_reports, 1);
        assert_int_equal(w->n_reports, 1);
        assert_int_equal(s->reports[0].framework, cases[i].fw);
        assert_int_equal(s->reports[0].line, cases[i].line);
        if (cases[i].requested)
            assert_int_equal(s->reports[0].requested_bytes, cases[i].requested);
        assert_int_equal(w->reports[0].requested_bytes, s->reports[0].requested_bytes);
        od_triage_free(s);
        od_triage_free(w);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(phrases_can_be_keyed),         cmocka_unit_test(each_row_reads_its_example),
        cmocka_unit_test(examples_are_real_lines),      cmocka_unit_test(twelve_lines_one_report),
        cmocka_unit_test(the_stream_keeps_each_wording), cmocka_unit_test(ordinary_lines_are_not_kept),
        cmocka_unit_test(wrapped_phrases),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
