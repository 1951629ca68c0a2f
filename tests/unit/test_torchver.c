/* test_torchver.c - the feature table, version parsing, and the releases inferred from the
 * real OOM messages in tests/data/messages and from hand-made ones and snapshot keys. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "slurp.h"

#include "analyze/advice.h"
#include "base/torchver.h"
#include "read/triage/triage.h"

static od_torch_version V(unsigned major, unsigned minor)
{
    od_torch_version v = {major, minor, 0, 0};
    return v;
}

/* Is v the release series major.minor? (0, 0: the unknown version.) */
static int is(od_torch_version v, unsigned major, unsigned minor)
{
    return v.major == major && v.minor == minor && v.patch == 0 && v.nightly == 0;
}

static void assert_range(const od_torch_range *r, unsigned lo_major, unsigned lo_minor, unsigned hi_major,
                         unsigned hi_minor)
{
    if (!is(r->lower, lo_major, lo_minor) || !is(r->upper, hi_major, hi_minor))
        fail_msg("range [%u.%u, %u.%u], expected [%u.%u, %u.%u] (%s; %s)", r->lower.major, r->lower.minor,
                 r->upper.major, r->upper.minor, lo_major, lo_minor, hi_major, hi_minor, r->why,
                 r->refined ? r->refined : "-");
    assert_non_null(r->why);
}

static int infer_file(const char *path, od_torch_range *r)
{
    size_t len;
    char *b = slurp(path, &len);
    int k = od_torch_infer_message(b, len, r);
    free(b);
    return k;
}

static int infer(const char *s, od_torch_range *r)
{
    return od_torch_infer_message(s, strlen(s), r);
}

/* ---------- versions ---------- */

static void parses_versions(void **state)
{
    (void)state;
    od_torch_version v;
    assert_int_equal(od_torch_version_parse("2.1.0", &v), OD_OK);
    assert_true(v.major == 2 && v.minor == 1 && v.patch == 0 && !v.nightly);
    assert_int_equal(od_torch_version_parse("2.1", &v), OD_OK);
    assert_true(v.major == 2 && v.minor == 1 && v.patch == 0 && !v.nightly);
    assert_int_equal(od_torch_version_parse("1.13.1+cu117", &v), OD_OK);
    assert_true(v.major == 1 && v.minor == 13 && v.patch == 1 && !v.nightly);
    assert_int_equal(od_torch_version_parse("2.5.0a0+git1b2c3d4", &v), OD_OK);
    assert_true(v.major == 2 && v.minor == 5 && v.patch == 0 && v.nightly);
    assert_int_equal(od_torch_version_parse("2.5.0.dev20240801+cu121", &v), OD_OK);
    assert_true(v.major == 2 && v.minor == 5 && v.patch == 0 && v.nightly);
    assert_int_equal(od_torch_version_parse("2.1.0rc1", &v), OD_OK);
    assert_true(v.major == 2 && v.minor == 1 && !v.nightly);
    assert_int_equal(od_torch_version_parse("v2.3.1+rocm6.0", &v), OD_OK);
    assert_true(v.major == 2 && v.minor == 3 && v.patch == 1);
    assert_int_equal(od_torch_version_parse(" 2.4.0\n", &v), OD_OK);
    assert_true(v.major == 2 && v.minor == 4);
    assert_int_equal(od_torch_version_parse("1.10.2.post3", &v), OD_OK);
    assert_true(v.major == 1 && v.minor == 10 && v.patch == 2);
}

static void rejects_bad_versions(void **state)
{
    (void)state;
    const char *bad[] = {"", "2", "2.", "2.1.", "abc", "2.x", "2.1.0+", "2.1.0 extra", "12345.1", "2..1", "-2.1"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        od_torch_version v = {9, 9, 9, 1};
        if (od_torch_version_parse(bad[i], &v) != OD_ERR_ARG)
            fail_msg("accepted \"%s\"", bad[i]);
        assert_false(od_torch_version_known(v)); /* set to unknown on failure */
    }
    od_torch_version v = {9, 9, 9, 0};
    assert_int_equal(od_torch_version_parse(NULL, &v), OD_ERR_ARG);
    assert_false(od_torch_version_known(v));
}

static void compares_and_formats(void **state)
{
    (void)state;
    od_torch_version a, b;
    assert_int_equal(od_torch_version_parse("1.13.1", &a), OD_OK);
    assert_int_equal(od_torch_version_parse("1.9.0", &b), OD_OK);
    assert_true(od_torch_version_cmp(a, b) > 0); /* 13 > 9, not "1.13" < "1.9" */
    assert_int_equal(od_torch_version_parse("2.5.0a0", &b), OD_OK);
    assert_true(od_torch_version_cmp(b, V(2, 5)) < 0);
    assert_true(od_torch_version_cmp(b, V(2, 4)) > 0);
    assert_int_equal(od_torch_version_cmp(V(2, 1), V(2, 1)), 0);
    char buf[32];
    assert_string_equal(od_torch_version_format(a, buf, sizeof buf), "1.13.1");
    assert_string_equal(od_torch_version_format(b, buf, sizeof buf), "2.5.0 (dev build)");
    od_torch_version u = {0, 0, 0, 0};
    assert_string_equal(od_torch_version_format(u, buf, sizeof buf), "unknown");
    assert_string_equal(od_torch_version_format(a, buf, 3), "1.");
}

/* ---------- the table ---------- */

static void every_feature_has_a_release_and_a_name(void **state)
{
    (void)state;
    for (int f = 0; f < OD_TORCH_N_FEATURES; f++) {
        const char *name = od_torch_feature_name((od_torch_feature)f);
        assert_non_null(name);
        assert_true(strlen(name) > 0);
        assert_true(od_torch_version_known(od_torch_since((od_torch_feature)f)));
        for (int g = 0; g < f; g++)
            assert_string_not_equal(name, od_torch_feature_name((od_torch_feature)g));
    }
    assert_null(od_torch_feature_name(OD_TORCH_N_FEATURES));
    assert_false(od_torch_version_known(od_torch_since(OD_TORCH_N_FEATURES)));
    assert_int_equal(od_torch_has(V(2, 5), OD_TORCH_N_FEATURES), -1);
    assert_string_equal(od_torch_feature_name(OD_TORCH_EXPANDABLE_SEGMENTS), "expandable_segments");
    assert_string_equal(od_torch_feature_name(OD_TORCH_BACKEND_CUDA_MALLOC_ASYNC), "backend:cudaMallocAsync");
}

static void table_order_matches_history(void **state)
{
    (void)state;
    /* Settings that refine others cannot predate them. */
    assert_true(od_torch_version_cmp(od_torch_since(OD_TORCH_ALLOC_CONF), od_torch_since(OD_TORCH_MAX_SPLIT_SIZE_MB)) <= 0);
    assert_true(od_torch_version_cmp(od_torch_since(OD_TORCH_ROUNDUP_POWER2_DIVISIONS),
                                     od_torch_since(OD_TORCH_ROUNDUP_POWER2_LIST)) < 0);
    assert_true(od_torch_version_cmp(od_torch_since(OD_TORCH_RECORD_MEMORY_HISTORY),
                                     od_torch_since(OD_TORCH_RECORD_MEMORY_HISTORY_TRACE)) < 0);
    assert_true(od_torch_version_cmp(od_torch_since(OD_TORCH_RECORD_MEMORY_HISTORY_TRACE),
                                     od_torch_since(OD_TORCH_RECORD_MEMORY_HISTORY_ALL)) < 0);
    assert_true(is(od_torch_since(OD_TORCH_EXPANDABLE_SEGMENTS), 2, 1));
    assert_true(is(od_torch_since(OD_TORCH_MAX_SPLIT_SIZE_MB), 1, 10));
    assert_true(is(od_torch_since(OD_TORCH_RECORD_MEMORY_HISTORY_ALL), 2, 1));
    assert_true(is(od_torch_since(OD_TORCH_DUMP_SNAPSHOT), 2, 1));
    assert_true(is(od_torch_since(OD_TORCH_COMPILE), 2, 0));
}

static void has_answers_by_release(void **state)
{
    (void)state;
    od_torch_version v;
    assert_int_equal(od_torch_version_parse("2.0.1+cu118", &v), OD_OK);
    assert_int_equal(od_torch_has(v, OD_TORCH_EXPANDABLE_SEGMENTS), 0);
    assert_int_equal(od_torch_has(v, OD_TORCH_BACKEND_CUDA_MALLOC_ASYNC), 1);
    assert_int_equal(od_torch_has(v, OD_TORCH_RECORD_MEMORY_HISTORY_TRACE), 1);
    assert_int_equal(od_torch_has(v, OD_TORCH_RECORD_MEMORY_HISTORY_ALL), 0);
    assert_int_equal(od_torch_has(v, OD_TORCH_DUMP_SNAPSHOT), 0);
    assert_int_equal(od_torch_version_parse("2.1.0", &v), OD_OK);
    assert_int_equal(od_torch_has(v, OD_TORCH_EXPANDABLE_SEGMENTS), 1);
    assert_int_equal(od_torch_has(v, OD_TORCH_PINNED_USE_CUDA_HOST_REGISTER), 0);
    assert_int_equal(od_torch_version_parse("1.13.1+cu117", &v), OD_OK);
    assert_int_equal(od_torch_has(v, OD_TORCH_RECORD_MEMORY_HISTORY), 1);
    assert_int_equal(od_torch_has(v, OD_TORCH_COMPILE), 0);
    /* A dev build of 2.1 may predate 2.1's features, but has everything older. */
    assert_int_equal(od_torch_version_parse("2.1.0a0+git1234567", &v), OD_OK);
    assert_int_equal(od_torch_has(v, OD_TORCH_EXPANDABLE_SEGMENTS), -1);
    assert_int_equal(od_torch_has(v, OD_TORCH_COMPILE), 1);
    od_torch_version u = {0, 0, 0, 0};
    assert_int_equal(od_torch_has(u, OD_TORCH_EMPTY_CACHE), -1);
}

/* ---------- the real messages ---------- */

static void torch1x_capacity(void **state)
{
    (void)state;
    od_torch_range r;
    assert_int_equal(infer_file("tests/data/messages/torch1x_capacity.txt", &r), 1);
    assert_range(&r, 1, 4, 1, 9);
    assert_null(r.refined); /* "RuntimeError:" (<= 1.12) does not narrow [1.4, 1.9] */
    assert_int_equal(od_torch_range_has(&r, OD_TORCH_MAX_SPLIT_SIZE_MB), 0);
    assert_int_equal(od_torch_range_has(&r, OD_TORCH_MEMORY_SUMMARY), 1);
    assert_int_equal(od_torch_range_has(&r, OD_TORCH_SET_PER_PROCESS_MEMORY_FRACTION), -1);
}

/* The brief's case: a 1.10 range has max_split_size_mb but not expandable_segments. */
static void torch110_fragmentation(void **state)
{
    (void)state;
    od_torch_range r;
    assert_int_equal(infer_file("tests/data/messages/torch110_fragmentation.txt", &r), 1);
    /* The 1.10-2.0 wording, narrowed by its plain "RuntimeError:" to before 1.13. */
    assert_range(&r, 1, 10, 1, 12);
    assert_non_null(strstr(r.why, "max_split_size_mb"));
    assert_non_null(r.refined);
    assert_non_null(strstr(r.refined, "RuntimeError"));
    assert_int_equal(od_torch_has(r.lower, OD_TORCH_EXPANDABLE_SEGMENTS), 0);
    assert_int_equal(od_torch_has(r.lower, OD_TORCH_MAX_SPLIT_SIZE_MB), 1);
    assert_int_equal(od_torch_has(r.lower, OD_TORCH_ALLOC_CONF), 1);
    assert_int_equal(od_torch_range_has(&r, OD_TORCH_EXPANDABLE_SEGMENTS), 0);
    assert_int_equal(od_torch_range_has(&r, OD_TORCH_MAX_SPLIT_SIZE_MB), 1);
    assert_int_equal(od_torch_range_has(&r, OD_TORCH_RECORD_MEMORY_HISTORY_ALL), 0);
    assert_int_equal(od_torch_range_has(&r, OD_TORCH_GARBAGE_COLLECTION_THRESHOLD), -1);
}

/* The one rule for advice and the user's torch (doctor and triage both use it), on the
 * real 1.10-1.12 message: expandable_segments (2.1) is missing, max_split_size_mb (1.10)
 * is there, garbage_collection_threshold (1.12) may be. */
static void advice_follows_the_version(void **state)
{
    (void)state;
    od_torch_range r;
    assert_int_equal(infer_file("tests/data/messages/torch110_fragmentation.txt", &r), 1);
    char buf[256];
    int lacks = -1;
    const od_advice_text *t = od_advice_get(OD_ADV_EXPANDABLE);
    assert_int_equal(od_advice_for_version(t->action, t->effect, NULL, &r, buf, sizeof buf, &lacks),
                     OD_TORCH_EXPANDABLE_SEGMENTS);
    assert_int_equal(lacks, 1);
    assert_string_equal(buf, "upgrade to torch >= 2.1.0, then set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True");
    /* two features named: the one no allowed release has is not there; the one some may
     * have decides, and the action stays */
    t = od_advice_get(OD_ADV_SPLIT_GC);
    assert_int_equal(od_advice_for_version(t->action, t->effect, NULL, &r, buf, sizeof buf, &lacks),
                     OD_TORCH_GARBAGE_COLLECTION_THRESHOLD);
    assert_int_equal(lacks, 0);
    assert_string_equal(buf, t->action);
    t = od_advice_get(OD_ADV_MAX_SPLIT);
    assert_int_equal(od_advice_for_version(t->action, t->effect, NULL, &r, buf, sizeof buf, &lacks), -1);
    assert_string_equal(buf, t->action);
    /* 1.0-1.3 lacks both; the newer one is named */
    od_torch_range old = {V(1, 0), V(1, 3), "test", NULL};
    t = od_advice_get(OD_ADV_SPLIT_GC);
    assert_int_equal(od_advice_for_version(t->action, t->effect, NULL, &old, buf, sizeof buf, &lacks),
                     OD_TORCH_GARBAGE_COLLECTION_THRESHOLD);
    assert_int_equal(lacks, 1);
    assert_string_equal(buf, "upgrade to torch >= 1.12.0, then set "
                             "PYTORCH_CUDA_ALLOC_CONF=garbage_collection_threshold:0.8,max_split_size_mb:512");
    /* the version unknown: the feature is named, nothing is rewritten */
    t = od_advice_get(OD_ADV_EXPANDABLE);
    assert_int_equal(od_advice_for_version(t->action, t->effect, NULL, NULL, buf, sizeof buf, &lacks),
                     OD_TORCH_EXPANDABLE_SEGMENTS);
    assert_int_equal(lacks, 0);
    assert_string_equal(buf, t->action);
    /* advice that names no setting */
    t = od_advice_get(OD_ADV_SHRINK_STEP);
    assert_int_equal(od_advice_for_version(t->action, t->effect, NULL, &old, buf, sizeof buf, &lacks), -1);
}

/* triage's hints for the real 1.0-1.3 message: its report carries the wording's releases,
 * what works on them comes first, and the settings they lack become upgrades; the
 * fragmentation settings are those doctor offers (od_advice_fragmentation): without the
 * GC threshold in every allowed release, max_split_size_mb alone */
static void triage_hints_follow_the_message(void **state)
{
    (void)state;
    size_t len = 0;
    char *text = slurp("tests/data/messages/torch_cached_fragmentation.txt", &len);
    od_triage *t = NULL;
    od_error err;
    assert_int_equal(od_triage_parse(text, len, &t, &err), OD_OK);
    assert_int_equal(t->n_reports, 1);
    const od_oom_report *r = &t->reports[0];
    assert_true(r->have_torch_range);
    assert_range(&r->torch_range, 1, 0, 1, 3);
    od_hint h[8];
    size_t n = od_advice_hints(r, h, 8);
    assert_int_equal(n, 3);
    assert_int_equal(h[0].id, OD_ADV_SHAPES_FIXED);
    assert_int_equal(h[0].upgrade, 0);
    assert_int_equal(h[1].id, OD_ADV_EXPANDABLE);
    assert_int_equal(h[1].upgrade, 1);
    assert_string_equal(h[1].action, "upgrade to torch >= 2.1.0, then set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True");
    assert_int_equal(h[2].id, OD_ADV_MAX_SPLIT);
    assert_int_equal(h[2].upgrade, 1);
    assert_int_equal(h[2].alternative, 1); /* right after expandable_segments: "or ..." */
    assert_string_equal(h[2].action, "upgrade to torch >= 1.10.0, then set PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:512");
    od_triage_free(t);
    free(text);
    /* 1.10-1.12: max_split_size_mb leads (the GC threshold may be missing); it is no
     * alternative to what was moved after it */
    text = slurp("tests/data/messages/torch110_fragmentation.txt", &len);
    assert_int_equal(od_triage_parse(text, len, &t, &err), OD_OK);
    n = od_advice_hints(&t->reports[0], h, 8);
    assert_int_equal(n, 3);
    assert_int_equal(h[0].id, OD_ADV_MAX_SPLIT);
    assert_int_equal(h[0].alternative, 0);
    assert_string_equal(h[0].action, "set PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:512");
    assert_int_equal(h[2].id, OD_ADV_EXPANDABLE);
    assert_int_equal(h[2].upgrade, 1);
    /* no 1.10-1.12 release records a trace (2.0+), so no replay of one is offered for the
     * setting to use now; the upgrade keeps its replay, for after it */
    assert_null(h[0].command);
    assert_string_equal(h[2].command, "oomdoc replay <snapshot.pickle> --set expandable_segments:True");
    od_triage_free(t);
    free(text);
    /* the real 2.2+ fragmentation message: its user can record one */
    text = slurp("tests/data/extracted/frag_default_oom.txt", &len);
    assert_int_equal(od_triage_parse(text, len, &t, &err), OD_OK);
    n = od_advice_hints(&t->reports[0], h, 8);
    assert_true(n >= 1);
    assert_int_equal(h[0].id, OD_ADV_EXPANDABLE);
    assert_string_equal(h[0].command, "oomdoc replay <snapshot.pickle> --set expandable_segments:True");
    od_triage_free(t);
    free(text);
}

/* The same message wrapped as loggers and terminals wrap it, at word boundaries and at a
 * fixed width through words, at every width from 40 to 120 in steps of 5: triage's scan,
 * which rejoins the lines before it dates the message, reads it as the 1.10-1.12 wording
 * (its max_split_size_mb hint, on a line of its own or split) every time, and torchver
 * alone does for the word-wrapped text. */
/* The message in file, wrapped as a logger or a terminal would, at every width from
 * min_width to 120 columns: at a fixed width (a word may be cut) or at a space near it. Dated by
 * torchver when word-wrapped, and by triage either way, as the one-line message is; and
 * triage reads the hint of the message as the one line gives it (where the message ends
 * is od_torch_message_complete's rule for both). */
static void wrapped_message_reads_as_one(const char *file, size_t min_width)
{
    size_t len = 0;
    char *text = slurp(file, &len);
    while (len && (text[len - 1] == '\n' || text[len - 1] == ' '))
        len--;
    od_torch_range one;
    assert_int_equal(od_torch_infer_message(text, len, &one), 1);
    od_triage *t1 = NULL;
    od_error err;
    assert_int_equal(od_triage_parse(text, len, &t1, &err), OD_OK);
    assert_int_equal(t1->n_reports, 1);
    const int hint = t1->reports[0].msg_hint_expandable;
    od_triage_free(t1);
    char *w = malloc(2 * len + 2);
    assert_non_null(w);
    for (int words = 0; words < 2; words++)
        for (size_t width = min_width; width <= 120; width += 5) {
            size_t n = 0, col = 0;
            for (size_t i = 0; i < len; i++) {
                if (text[i] == '\n')
                    continue;
                if (words && text[i] == ' ' && col >= width - 12) { /* break at a space near the end */
                    w[n++] = '\n';
                    col = 0;
                    continue;
                }
                if (!words && col == width) {
                    w[n++] = '\n';
                    col = 0;
                }
                w[n++] = text[i];
                col++;
            }
            w[n] = 0;
            od_torch_range r;
            int dated = od_torch_infer_message(w, n, &r);
            /* torchver alone joins lines with a space: a word cut by a fixed width stays
             * cut, so only word-wrapped text is its to date whole */
            if (words && !dated)
                fail_msg("%s, width %zu (words): not dated", file, width);
            if (words && (od_torch_version_cmp(r.lower, one.lower) != 0 || od_torch_version_cmp(r.upper, one.upper) != 0))
                fail_msg("%s, width %zu (words): %u.%u to %u.%u", file, width, r.lower.major, r.lower.minor,
                         r.upper.major, r.upper.minor);
            od_triage *t = NULL;
            assert_int_equal(od_triage_parse(w, n, &t, &err), OD_OK);
            assert_int_equal(t->n_reports, 1);
            assert_true(t->reports[0].have_torch_range);
            const od_torch_range *g = &t->reports[0].torch_range;
            if (od_torch_version_cmp(g->lower, one.lower) != 0 || od_torch_version_cmp(g->upper, one.upper) != 0)
                fail_msg("%s: triage, width %zu (%s): %u.%u to %u.%u", file, width, words ? "words" : "fixed",
                         g->lower.major, g->lower.minor, g->upper.major, g->upper.minor);
            if (words && t->reports[0].msg_hint_expandable != hint)
                fail_msg("%s: triage, width %zu (words): the expandable_segments hint %s", file, width,
                         hint ? "lost" : "found");
            od_triage_free(t);
        }
    free(w);
    free(text);
}

static void wrapped_messages_keep_their_date(void **state)
{
    (void)state;
    od_torch_range r;
    assert_int_equal(infer_file("tests/data/messages/torch110_fragmentation.txt", &r), 1);
    assert_range(&r, 1, 10, 1, 12);
    wrapped_message_reads_as_one("tests/data/messages/torch110_fragmentation.txt", 40);
    /* 2.2+: the figures end with "but unallocated.", and the hint after them names
     * expandable_segments; 600 characters, 16 lines at 40 columns, where the line break
     * falls inside "CUDA out of memory" (2.1's too) */
    wrapped_message_reads_as_one("tests/data/messages/torch22_other_process.txt", 40);
    wrapped_message_reads_as_one("tests/data/messages/torch21_capacity.txt", 40);
}

/* A range reads by release series unless a bound is more precise. */
static void ranges_read_by_series(void **state)
{
    (void)state;
    static const struct {
        const char *lo, *hi, *want;
    } cases[] = {
        {"2.1", "2.1", "2.1"},           {"1.10", "1.12", "1.10 to 1.12"}, {"2.4", NULL, "2.4 or newer"},
        {NULL, "1.13", "1.13 or older"}, {NULL, NULL, "any"},              {"2.5.1", NULL, "2.5.1 or newer"},
        {"2.1", "2.1.2", "2.1 to 2.1.2"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        od_torch_range r;
        memset(&r, 0, sizeof r);
        if (cases[i].lo)
            assert_int_equal(od_torch_version_parse(cases[i].lo, &r.lower), OD_OK);
        if (cases[i].hi)
            assert_int_equal(od_torch_version_parse(cases[i].hi, &r.upper), OD_OK);
        char buf[80];
        assert_string_equal(od_torch_range_format(&r, buf, sizeof buf), cases[i].want);
    }
}

/* Where a message ends, case by case: its last phrase, or a hint that goes on (on the same
 * line or, when only its beginning is there, the next). */
static void where_a_message_ends(void **state)
{
    (void)state;
    static const struct { const char *msg, *next; int complete; } cases[] = {
        {"... 9.61 GiB cached)", "Traceback (most recent call last):", 1},
        {"... 75.40 GiB reserved in total by PyTorch)", "If reserved memory is >> allocated memory try", 0},
        {"... 75.40 GiB reserved in total by PyTorch)", "If it fails again, try max_split_size_mb", 1},
        {"... reserved in total by PyTorch) If reserved memory is >> allocated memory try", "setting", 0},
        {"... reserved in total by PyTorch) If reserved memory is >> allocated memory try setting "
         "max_split_size_mb to avoid fragmentation.", "", 1},
        {"... 412.30 MiB is reserved by PyTorch but unallocated.", "If reserved but unallocated memory is large", 0},
        {"... 412.30 MiB is reserved by PyTorch but unallocated.", "Epoch 3 done", 1},
        {"... but unallocated. If reserved but unallocated memory is large try", "setting", 0},
        {"... try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True", "to avoid fragmentation.", 1},
        {"... Use PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 to disable upper limit (may cause system failure).", "x", 1},
        {"CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of", "23.53 GiB", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *m = cases[i].msg, *nx = cases[i].next;
        if (od_torch_message_complete(m, m + strlen(m), nx, nx + strlen(nx)) != cases[i].complete)
            fail_msg("case %zu: \"%s\" then \"%s\": expected %s", i, m, nx, cases[i].complete ? "complete" : "going on");
    }
}

/* A line after a 1.4-1.9 message that begins with "If" but is not the 1.10-1.12 hint is not
 * read into the message, even when it names max_split_size_mb. */
static void next_line_if_is_not_the_hint(void **state)
{
    (void)state;
    size_t len = 0;
    char *text = slurp("tests/data/messages/torch1x_capacity.txt", &len);
    od_torch_range alone, followed;
    assert_int_equal(od_torch_infer_message(text, len, &alone), 1);
    static const char more[] = "If it fails again, the wiki says to try max_split_size_mb:128\n";
    char *t = malloc(len + sizeof more);
    memcpy(t, text, len);
    memcpy(t + len, more, sizeof more);
    assert_int_equal(od_torch_infer_message(t, len + sizeof more - 1, &followed), 1);
    assert_int_equal(od_torch_version_cmp(followed.lower, alone.lower), 0);
    assert_int_equal(od_torch_version_cmp(followed.upper, alone.upper), 0);
    assert_true(od_torch_version_cmp(alone.upper, V(1, 9)) <= 0);
    free(t);
    free(text);
}

static void torch21_capacity(void **state)
{
    (void)state;
    od_torch_range r;
    assert_int_equal(infer_file("tests/data/messages/torch21_capacity.txt", &r), 1);
    assert_range(&r, 2, 1, 2, 1);
    assert_non_null(strstr(r.why, "capacty"));
    assert_int_equal(od_torch_range_has(&r, OD_TORCH_EXPANDABLE_SEGMENTS), 1);
    assert_int_equal(od_torch_range_has(&r, OD_TORCH_DUMP_SNAPSHOT), 1);
    assert_int_equal(od_torch_range_has(&r, OD_TORCH_PINNED_USE_CUDA_HOST_REGISTER), 0);
    assert_int_equal(od_torch_range_has(&r, OD_TORCH_MEMPOOL), 0);
}

static void torch22_other_process(void **state)
{
    (void)state;
    od_torch_range r;
    assert_int_equal(infer_file("tests/data/messages/torch22_other_process.txt", &r), 1);
    /* The 2.2+ wording, narrowed by "torch.OutOfMemoryError" (2.4+). */
    assert_range(&r, 2, 4, 0, 0);
    assert_non_null(strstr(r.why, "expandable_segments"));
    assert_non_null(r.refined);
    assert_non_null(strstr(r.refined, "torch.OutOfMemoryError"));
    assert_int_equal(od_torch_range_has(&r, OD_TORCH_PINNED_USE_CUDA_HOST_REGISTER), 1);
    assert_int_equal(od_torch_range_has(&r, OD_TORCH_MEMPOOL), -1);
}

static void hip_fragmentation(void **state)
{
    (void)state;
    od_torch_range r;
    assert_int_equal(infer_file("tests/data/messages/hip_fragmentation.txt", &r), 1);
    assert_range(&r, 2, 4, 0, 0);
}

static void other_frameworks_are_not_dated(void **state)
{
    (void)state;
    const char *files[] = {"tests/data/messages/mps_watermark.txt", "tests/data/messages/tensorflow.txt",
                           "tests/data/messages/jax.txt"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        od_torch_range r;
        r.why = NULL;
        assert_int_equal(infer_file(files[i], &r), 0);
        assert_range(&r, 0, 0, 0, 0);
        assert_int_equal(od_torch_range_has(&r, OD_TORCH_EMPTY_CACHE), -1);
    }
}

/* ---------- hand-made messages ---------- */

static void older_wordings(void **state)
{
    (void)state;
    od_torch_range r;
    assert_int_equal(infer("RuntimeError: CUDA out of memory. Tried to allocate 12.50 MiB (GPU 0; 10.92 GiB total "
                           "capacity; 8.57 MiB already allocated; 9.28 GiB free; 4.68 MiB cached)",
                           &r),
                     1);
    assert_range(&r, 1, 0, 1, 3);
    assert_int_equal(infer("RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 10.76 GiB total "
                           "capacity; 1.00 GiB already allocated; 8.00 GiB free; 1.50 GiB allowed; 1.10 GiB reserved "
                           "in total by PyTorch)",
                           &r),
                     1);
    assert_range(&r, 1, 8, 1, 9);
    /* 1.13-2.0: the max_split_size_mb hint and OutOfMemoryError. */
    assert_int_equal(infer("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.39 GiB (GPU 0; 6.00 "
                           "GiB total capacity; 4.04 GiB already allocated; 478.00 MiB free; 4.15 GiB reserved in "
                           "total by PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb "
                           "to avoid fragmentation.  See documentation for Memory Management and "
                           "PYTORCH_CUDA_ALLOC_CONF",
                           &r),
                     1);
    assert_range(&r, 1, 13, 2, 0);
    assert_non_null(r.refined);
    /* The same with a plain RuntimeError: 1.10-1.12. */
    assert_int_equal(infer("RuntimeError: CUDA out of memory. Tried to allocate 1.39 GiB (GPU 0; 6.00 GiB total "
                           "capacity; 4.04 GiB already allocated; 478.00 MiB free; 4.15 GiB reserved in total by "
                           "PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to avoid "
                           "fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF",
                           &r),
                     1);
    assert_range(&r, 1, 10, 1, 12);
    assert_int_equal(infer("RuntimeError: cuda runtime error (2) : out of memory at "
                           "/pytorch/aten/src/THC/THCCachingAllocator.cpp:510",
                           &r),
                     1);
    assert_range(&r, 0, 0, 0, 4);
    assert_int_equal(od_torch_range_has(&r, OD_TORCH_EMPTY_CACHE), -1);
    assert_int_equal(od_torch_range_has(&r, OD_TORCH_MEMORY_STATS), 0);
}

static void newer_wordings(void **state)
{
    (void)state;
    od_torch_range r;
    /* The wording 2.1 introduced, typo fixed, hint not yet changed. */
    assert_int_equal(infer("CUDA out of memory. Tried to allocate 310.00 MiB. GPU 0 has a total capacity of 39.56 GiB "
                           "of which 108.81 MiB is free. Process 305661 has 39.45 GiB memory in use. Of the allocated "
                           "memory 33.29 GiB is allocated by PyTorch, and 1.22 GiB is reserved by PyTorch but "
                           "unallocated. If reserved but unallocated memory is large try setting max_split_size_mb to "
                           "avoid fragmentation. See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF",
                           &r),
                     1);
    assert_range(&r, 2, 1, 2, 2);
    /* 2.2+, with torch.cuda.OutOfMemoryError (no narrowing: 1.13 < 2.2). */
    assert_int_equal(infer("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 22.00 MiB. GPU 0 has a "
                           "total capacity of 23.65 GiB of which 11.06 MiB is free. Including non-PyTorch memory, this "
                           "process has 23.60 GiB memory in use. Of the allocated memory 22.90 GiB is allocated by "
                           "PyTorch, and 194.87 MiB is reserved by PyTorch but unallocated. If reserved but "
                           "unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "
                           "to avoid fragmentation.  See documentation for Memory Management  "
                           "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)",
                           &r),
                     1);
    assert_range(&r, 2, 2, 0, 0);
    assert_null(r.refined);
    /* The unified variable's name in the hint: 2.8+. */
    assert_int_equal(infer("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 112.00 MiB. GPU 0 has a "
                           "total capacity of 31.36 GiB of which 53.06 MiB is free. Of the allocated memory 30.35 GiB "
                           "is allocated by PyTorch, and 319.13 MiB is reserved by PyTorch but unallocated. If "
                           "reserved but unallocated memory is large try setting "
                           "PYTORCH_ALLOC_CONF=expandable_segments:True to avoid fragmentation.",
                           &r),
                     1);
    assert_range(&r, 2, 8, 0, 0);
    /* The cudaMallocAsync backend's own message. */
    assert_int_equal(infer("torch.cuda.OutOfMemoryError: Allocation on device 5 would exceed allowed memory. (out of "
                           "memory)\nCurrently allocated     : 54.14 GiB\nRequested               : 686.41 MiB\n"
                           "Device limit            : 79.35 GiB\nFree (according to CUDA): 27.19 MiB\n",
                           &r),
                     1);
    assert_range(&r, 2, 0, 0, 0);
    assert_int_equal(od_torch_range_has(&r, OD_TORCH_BACKEND_CUDA_MALLOC_ASYNC), 1);
    /* Cut right after the request (pytorch issue #126766). */
    assert_int_equal(infer("OutOfMemoryError: CUDA out of memory. Tried to allocate 3725.29 GiB. GPU", &r), 1);
    assert_range(&r, 2, 1, 0, 0);
}

static void wrapped_and_embedded(void **state)
{
    (void)state;
    od_torch_range r;
    /* A logger wrapped the message; the hint is on its own line. */
    const char *wrapped = "2023-01-02 10:00:00 ERROR train.py:12 step failed\n"
                          "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 10.76 GiB total\n"
                          "    capacity; 9.71 GiB already allocated; 4.56 MiB free; 9.72 GiB reserved in total by "
                          "PyTorch)\n"
                          "    If reserved memory is >> allocated memory try setting max_split_size_mb to avoid\n"
                          "    fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF\n"
                          "later: user notes mention expandable_segments:True\n";
    assert_int_equal(infer(wrapped, &r), 1);
    assert_range(&r, 1, 10, 1, 12);
    /* What follows a complete 1.x message is not read as its hint. */
    const char *followed = "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 10.76 GiB total "
                           "capacity; 9.71 GiB already allocated; 4.56 MiB free; 9.72 GiB reserved in total by "
                           "PyTorch)\n"
                           "I then tried max_split_size_mb:128 and it did not help\n";
    assert_int_equal(infer(followed, &r), 1);
    assert_range(&r, 1, 4, 1, 9);
    /* The first report wins; the buffer need not be NUL-terminated. */
    const char *two = "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 256.00 MiB. GPU 0 has a "
                      "total capacty of 79.15 GiB of which 118.81 MiB is free.\n"
                      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
                      "capacity of 23.53 GiB of which 1.06 GiB is free. If reserved but unallocated memory is large "
                      "try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.XXXX";
    assert_int_equal(od_torch_infer_message(two, strlen(two) - 4, &r), 1);
    assert_range(&r, 2, 1, 2, 1);
    /* A name that contradicts the wording is not used. */
    assert_int_equal(infer("RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity "
                           "of 23.53 GiB of which 1.06 GiB is free. If reserved but unallocated memory is large try "
                           "setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.",
                           &r),
                     1);
    assert_range(&r, 2, 2, 0, 0);
    assert_non_null(r.refined);
    assert_non_null(strstr(r.refined, "disagrees"));
}

static void not_a_dated_message(void **state)
{
    (void)state;
    od_torch_range r;
    assert_int_equal(od_torch_infer_message("", 0, &r), 0);
    assert_int_equal(od_torch_infer_message(NULL, 10, &r), 0);
    assert_range(&r, 0, 0, 0, 0);
    assert_int_equal(infer("RuntimeError: CUDA error: out of memory\nCUDA kernel errors might be asynchronously "
                           "reported",
                           &r),
                     0);
    assert_int_equal(infer("vLLM: CUDA out of memory while profiling; lower gpu_memory_utilization", &r), 0);
    assert_non_null(r.why);
    assert_range(&r, 0, 0, 0, 0);
}

/* ---------- snapshots ---------- */

static void snapshot_keys_give_lower_bounds(void **state)
{
    (void)state;
    const char *why = NULL;
    od_torch_snapshot_keys k;
    memset(&k, 0, sizeof k);
    assert_false(od_torch_version_known(od_torch_snapshot_since(&k, &why)));
    assert_non_null(why);
    assert_false(od_torch_version_known(od_torch_snapshot_since(NULL, NULL)));

    k.block_history = 1; /* torch 1.13's list of segments */
    assert_true(is(od_torch_snapshot_since(&k, &why), 1, 13));
    memset(&k, 0, sizeof k);
    k.dict_layout = k.device_traces = k.segment_pool_id = 1;
    assert_true(is(od_torch_snapshot_since(&k, &why), 2, 0));
    k.is_expandable = 1;
    assert_true(is(od_torch_snapshot_since(&k, &why), 2, 1));
    k.allocator_settings = 1;
    assert_true(is(od_torch_snapshot_since(&k, &why), 2, 3));
    assert_non_null(strstr(why, "allocator_settings"));
    k.external_annotations = 1;
    assert_true(is(od_torch_snapshot_since(&k, &why), 2, 4));
    k.compile_context = 1;
    assert_true(is(od_torch_snapshot_since(&k, &why), 2, 8));
    k.user_metadata = 1;
    assert_true(is(od_torch_snapshot_since(&k, &why), 2, 10));
    assert_non_null(strstr(why, "user_metadata"));
    /* The bound answers has(): a snapshot with allocator_settings proves expandable
     * segments exist, not that MemPool does. */
    memset(&k, 0, sizeof k);
    k.dict_layout = k.allocator_settings = 1;
    od_torch_version v = od_torch_snapshot_since(&k, NULL);
    assert_int_equal(od_torch_has(v, OD_TORCH_EXPANDABLE_SEGMENTS), 1);
    assert_int_equal(od_torch_has(v, OD_TORCH_PINNED_USE_CUDA_HOST_REGISTER), 1);
    assert_int_equal(od_torch_has(v, OD_TORCH_MEMPOOL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parses_versions),
        cmocka_unit_test(rejects_bad_versions),
        cmocka_unit_test(compares_and_formats),
        cmocka_unit_test(every_feature_has_a_release_and_a_name),
        cmocka_unit_test(table_order_matches_history),
        cmocka_unit_test(has_answers_by_release),
        cmocka_unit_test(torch1x_capacity),
        cmocka_unit_test(torch110_fragmentation),
        cmocka_unit_test(advice_follows_the_version),
        cmocka_unit_test(triage_hints_follow_the_message),
        cmocka_unit_test(wrapped_messages_keep_their_date),
        cmocka_unit_test(ranges_read_by_series),
        cmocka_unit_test(where_a_message_ends),
        cmocka_unit_test(next_line_if_is_not_the_hint),
        cmocka_unit_test(torch21_capacity),
        cmocka_unit_test(torch22_other_process),
        cmocka_unit_test(hip_fragmentation),
        cmocka_unit_test(other_frameworks_are_not_dated),
        cmocka_unit_test(older_wordings),
        cmocka_unit_test(newer_wordings),
        cmocka_unit_test(wrapped_and_embedded),
        cmocka_unit_test(not_a_dated_message),
        cmocka_unit_test(snapshot_keys_give_lower_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
