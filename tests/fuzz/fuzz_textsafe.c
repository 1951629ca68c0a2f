/* fuzz_textsafe.c - the text-safety functions on arbitrary bytes (lib/base/textsafe.h),
 * with the promises the terminal and JSON rely on checked on every input:
 *   od_text_escape: nothing a terminal acts on is left (no C0, DEL, ESC; valid UTF-8 with
 *     no C1 or bidi control), and a cut result is a prefix of the whole one;
 *   od_utf8_sanitize: valid UTF-8; equal to the input when the input was;
 *   od_utf8_cut / od_utf8_trim: never inside a character of valid UTF-8;
 *   od_text_wrap: every line fits the width unless the line is left alone, and nothing
 *     but spaces and newlines is added or lost;
 *   od_path_short / od_text_shorten_paths: a suffix, and never longer.
 * The first byte picks the width, the rest is the text. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/textsafe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_escaped(const char *e, size_t n)
{
    if (!od_utf8_valid(e, n))
        abort();
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t k = od_utf8_decode(e + i, n - i, &cp);
        if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f) || (cp >= 0x202a && cp <= 0x202e) ||
            (cp >= 0x2066 && cp <= 0x2069))
            abort();
        i += k;
    }
}

/* s without its spaces and newlines, into out; returns the length. */
static size_t squeeze(const char *s, size_t n, char *out)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\n')
            out[k++] = s[i];
    return k;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0 || size > 4096)
        return 0;
    size_t width = data[0];
    const char *s = (const char *)data + 1;
    size_t n = size - 1;
    char *buf = malloc(16 * n + 64), *small = malloc(64), *sq1 = malloc(n + 1), *sq2 = malloc(16 * n + 64);
    if (!buf || !small || !sq1 || !sq2)
        abort();

    for (unsigned flags = 0; flags <= OD_ESC_BACKSLASH; flags++) {
        size_t need = od_text_escape(s, n, flags, buf, 16 * n + 64);
        if (need >= 16 * n + 64 || strlen(buf) != need)
            abort();
        check_escaped(buf, need);
        if (od_text_is_safe(s, n, flags) != (need == n && memcmp(buf, s, n) == 0))
            abort();
        od_text_escape(s, n, flags, small, 64); /* cut: a prefix of the whole, whole units */
        if (strncmp(buf, small, strlen(small)) != 0)
            abort();
        check_escaped(small, strlen(small));
    }

    size_t need = od_utf8_sanitize(s, n, buf, 16 * n + 64);
    if (!od_utf8_valid(buf, need) || (od_utf8_valid(s, n) && (need != n || memcmp(buf, s, n) != 0)))
        abort();
    if (od_utf8_valid(s, n)) {
        size_t c = od_utf8_cut(s, n, width);
        if (c > width || !od_utf8_valid(s, c))
            abort();
        if (!od_utf8_valid(s, od_utf8_trim(s, c < n ? c + 1 : c)))
            abort();
    }

    /* Wrapping works on one line of text: cut at the first newline. */
    const char *nl = memchr(s, '\n', n);
    size_t ln = nl ? (size_t)(nl - s) : n;
    need = od_text_wrap(s, ln, width, buf, 16 * n + 64);
    if (need >= 16 * n + 64 || buf[need] != 0) /* (a line left alone may hold a NUL) */
        abort();
    if (squeeze(s, ln, sq1) != squeeze(buf, need, sq2) || memcmp(sq1, sq2, squeeze(s, ln, sq1)) != 0)
        abort();
    if (need != ln || memcmp(buf, s, ln) != 0) { /* it wrapped: every line fits */
        for (const char *l = buf; l < buf + need;) {
            const char *e = memchr(l, '\n', (size_t)(buf + need - l));
            size_t k = e ? (size_t)(e - l) : (size_t)(buf + need - l);
            if (od_text_width(l, k) > width && k > 1)
                abort();
            l += k + (e != NULL);
        }
    }

    /* Paths: a suffix, never longer. */
    char *z = malloc(ln + 1);
    if (!z)
        abort();
    memcpy(z, s, ln);
    z[ln] = 0;
    z[strcspn(z, "\0")] = 0;
    size_t zl = strlen(z);
    const char *p = od_path_short(z, "/home/user/project");
    if (p < z || p > z + zl)
        abort();
    need = od_text_shorten_paths(z, zl, "/home/user/project", buf, 16 * n + 64);
    if (need > zl)
        abort();
    free(z);
    free(buf);
    free(small);
    free(sq1);
    free(sq2);
    return 0;
}
