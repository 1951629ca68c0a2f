/* test_textsafe.c - escaping for a terminal, UTF-8 cuts and repair, short paths, wrapping.
 * Expected strings are written out by hand from the rules in textsafe.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "base/textsafe.h"

static const char *esc(const char *s, unsigned flags)
{
    static char buf[512];
    od_text_escape(s, strlen(s), flags, buf, sizeof buf);
    return buf;
}

static void escapes_what_a_terminal_acts_on(void **state)
{
    (void)state;
    /* The title-and-clear attack of the issue: OSC 0 ... BEL, then ED 2. */
    assert_string_equal(esc("main\x1b]0;pwned\x07\x1b[2J", 0), "main\\e]0;pwned\\x07\\e[2J");
    assert_string_equal(esc("a\nb\tc\rd\x7f", 0), "a\\nb\\tc\\rd\\x7f");
    /* C1 controls as UTF-8 (CSI is U+009B) and a bidi override. */
    assert_string_equal(esc("x\xc2\x9b" "2Jy", 0), "x\\u{009b}2Jy");
    assert_string_equal(esc("evil\xe2\x80\xaetxt.py", 0), "evil\\u{202e}txt.py");
    /* Invalid UTF-8: a raw C1 byte, a truncated sequence, an overlong NUL. */
    assert_string_equal(esc("a\x9b" "b", 0), "a\\x9bb");
    assert_string_equal(esc("caf\xc3", 0), "caf\\xc3");
    assert_string_equal(esc("\xc0\x80", 0), "\\xc0\\x80");
    /* Valid text is kept; backslashes only with OD_ESC_BACKSLASH. */
    assert_string_equal(esc("modèle_中文.py", 0), "modèle_中文.py");
    assert_string_equal(esc("C:\\x\\y.py", 0), "C:\\x\\y.py");
    assert_string_equal(esc("C:\\x", OD_ESC_BACKSLASH), "C:\\\\x");
    assert_true(od_text_is_safe("modèle.py", 10, 0));
    assert_false(od_text_is_safe("a\x1b", 2, 0));
}

static void escape_cuts_whole_units(void **state)
{
    (void)state;
    char buf[8];
    /* "ab\e..." needs 2 + 2 + 2 + ...: a buffer of 8 holds "ab\e\e" (6) + nothing cut. */
    size_t need = od_text_escape("ab\x1b\x1b\x1b", 5, 0, buf, sizeof buf);
    assert_int_equal(need, 8);
    assert_string_equal(buf, "ab\\e\\e");
    need = od_text_escape("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", 8, 0, buf, 6);
    assert_int_equal(need, 8);
    assert_string_equal(buf, "\xc3\xa9\xc3\xa9"); /* 4 bytes, not 5 */
}

static void utf8_cut_and_repair(void **state)
{
    (void)state;
    const char *s = "x\xc3\xa9\xc3\xa9"; /* x é é: 5 bytes */
    assert_int_equal(od_utf8_cut(s, 5, 5), 5);
    assert_int_equal(od_utf8_cut(s, 5, 4), 3);
    assert_int_equal(od_utf8_cut(s, 5, 2), 1);
    assert_int_equal(od_utf8_cut("\xe4\xb8\xad", 3, 2), 0);
    assert_int_equal(od_utf8_cut("a\xff" "b", 3, 2), 2); /* an invalid byte is a unit */
    assert_int_equal(od_utf8_trim(s, 5), 5);
    assert_int_equal(od_utf8_trim(s, 4), 3); /* "x\xc3\xa9\xc3": the last é cut */
    assert_int_equal(od_utf8_trim("\xe4\xb8\xad\xe4\xb8", 5), 3);
    assert_int_equal(od_utf8_trim("ab", 2), 2);
    assert_true(od_utf8_valid(s, 5));
    assert_false(od_utf8_valid(s, 4));
    assert_false(od_utf8_valid("\xed\xa0\x80", 3)); /* a surrogate */
    char buf[32];
    assert_int_equal(od_utf8_sanitize("a\xffz\xc3", 4, buf, sizeof buf), 8);
    assert_string_equal(buf, "a\xef\xbf\xbdz\xef\xbf\xbd");
    uint32_t cp;
    assert_int_equal(od_utf8_decode("\xf0\x9f\x98\x80", 4, &cp), 4);
    assert_int_equal(cp, 0x1f600);
}

static void widths(void **state)
{
    (void)state;
    assert_int_equal(od_text_width("abc", 3), 3);
    assert_int_equal(od_text_width("\x1b[1mab\x1b[0m", 10), 2);
    assert_int_equal(od_text_width("中文", 6), 4);
    assert_int_equal(od_text_width("e\xcc\x81", 3), 1); /* e + combining acute */
}

static void short_paths(void **state)
{
    (void)state;
    const char *p = "/home/user/.venv/lib/python3.12/site-packages/transformers/models/llama/modeling_llama.py";
    assert_string_equal(od_path_short(p, "/home/user/project"), "transformers/models/llama/modeling_llama.py");
    assert_string_equal(od_path_short("/usr/lib/python3/dist-packages/torch/nn/modules/module.py", NULL),
                        "torch/nn/modules/module.py");
    assert_string_equal(od_path_short("/home/user/project/train.py", "/home/user/project"), "train.py");
    assert_string_equal(od_path_short("/home/user/project/train.py", "/home/user/project/"), "train.py");
    assert_string_equal(od_path_short("/home/user/projectX/train.py", "/home/user/project"),
                        "/home/user/projectX/train.py");
    assert_string_equal(od_path_short("/home/user/project/train.py", "/"), "/home/user/project/train.py");
    assert_string_equal(od_path_short("<no python frames>", "/x"), "<no python frames>");
    /* "my-site-packages/" is not the directory. */
    assert_string_equal(od_path_short("/x/my-site-packages/a.py", NULL), "/x/my-site-packages/a.py");

    char buf[512];
    const char *t = "the failing line is /h/.venv/lib/python3.12/site-packages/transformers/x.py:254:forward "
                    "(128 MiB), held by /w/train.py:96:step and (/w/sub/m.py:3:f)";
    od_text_shorten_paths(t, strlen(t), "/w", buf, sizeof buf);
    assert_string_equal(buf, "the failing line is transformers/x.py:254:forward (128 MiB), held by "
                             "train.py:96:step and (sub/m.py:3:f)");
    /* Only at the start of a token. */
    t = "a/w/b.py x=/w/c.py";
    od_text_shorten_paths(t, strlen(t), "/w", buf, sizeof buf);
    assert_string_equal(buf, "a/w/b.py x=c.py");
}

static const char *wrap(const char *s, size_t width)
{
    static char buf[2048];
    od_text_wrap(s, strlen(s), width, buf, sizeof buf);
    return buf;
}

static void wraps_with_a_hanging_indent(void **state)
{
    (void)state;
    /* Fits: unchanged. */
    assert_string_equal(wrap("  short line", 40), "  short line");
    /* A list item: continuation under the text after "- " (and 126.47 keeps its GiB). */
    assert_string_equal(wrap("    - the device had 126.47 GiB free but the pool could not grow", 30),
                        "    - the device had\n"
                        "      126.47 GiB free but the\n"
                        "      pool could not grow");
    /* A numbered item. */
    assert_string_equal(wrap("  1. raise the cap to at least 8.50 GiB of 139.80", 24),
                        "  1. raise the cap to\n"
                        "     at least 8.50 GiB\n"
                        "     of 139.80");
    /* A table row: continuation under its last field. */
    assert_string_equal(wrap("    512 B   1  train.py:12:main (transformers/pytorch_utils.py:110:__init__)", 46),
                        "    512 B   1  train.py:12:main\n"
                        "               (transformers/pytorch_utils.py:\n"
                        "               110:__init__)");
    /* A word longer than the line breaks after a '/' (or a ':'), filling the first line. */
    assert_string_equal(wrap("at /aaaa/bbbb/cccc/dddd/eeee/ffff/gggg", 20),
                        "at /aaaa/bbbb/cccc/\n"
                        "  dddd/eeee/ffff/\n"
                        "  gggg");
    /* A number keeps its unit; a long setting breaks after a ','. */
    assert_string_equal(wrap("  device 0: 836.60 MiB allocated; 1.40 MiB stranded", 34),
                        "  device 0: 836.60 MiB allocated;\n"
                        "    1.40 MiB stranded");
    assert_string_equal(wrap("set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True,garbage_collection_threshold:0.8", 60),
                        "set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True,\n"
                        "  garbage_collection_threshold:0.8");
    /* Without a marker or a field: two columns in from the line's own indent. */
    assert_string_equal(wrap("     checked (replay): the trace replayed under a cap", 30),
                        "     checked (replay): the\n"
                        "       trace replayed under a\n"
                        "       cap");
    /* Colour takes no columns and is never split. */
    assert_string_equal(wrap("\x1b[1mverdict:\x1b[0m cap_limit because of that", 24),
                        "\x1b[1mverdict:\x1b[0m cap_limit\n"
                        "  because of that");
    /* Drawn in place: left alone. */
    const char *inplace = "\x1b[2A\x1b[Kaaaa bbbb cccc dddd eeee ffff gggg hhhh iiii";
    assert_string_equal(wrap(inplace, 20), inplace);
    /* Every output line fits. */
    const char *longl = "  stranded            1.40 MiB (free inside segments in use: empty_cache() cannot release it)";
    const char *w = wrap(longl, 50);
    for (const char *l = w; *l;) {
        const char *e = strchr(l, '\n');
        size_t n = e ? (size_t)(e - l) : strlen(l);
        assert_true(od_text_width(l, n) <= 50);
        l += n + (e != NULL);
    }
    assert_non_null(strstr(w, "\n                      "));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(escapes_what_a_terminal_acts_on),
        cmocka_unit_test(escape_cuts_whole_units),
        cmocka_unit_test(utf8_cut_and_repair),
        cmocka_unit_test(widths),
        cmocka_unit_test(short_paths),
        cmocka_unit_test(wraps_with_a_hanging_indent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
