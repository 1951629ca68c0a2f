/* wrap.c - lines a logger or terminal wrapped, rejoined so that each wording reads as one
 * line; and a PyTorch message's wrapped lines, joined and dated.
 *
 * A logger or terminal that wraps at a fixed column splits words ("from devic\ne:") and
 * figures ("10.0\n5 GiB"); one that wraps at a word breaks a phrase at a space ("CUDA out
 * of\nmemory"). od_tr_unwrap() rejoins a break that is unambiguous:
 * - the two halves make one word of the OOM wordings below (and are not two such words), or
 *   a figure printed with two decimals followed by its unit: the rest of the next line moves
 *   up to the end of the broken one, and the bytes this frees at its end become markers
 *   (OD_WRAP_LINE for the line break, OD_WRAP_NONE for indentation);
 * - a rules.def phrase runs across the break, read as a space (the break becomes
 *   OD_WRAP_SOFT, which phrases read as a blank) or, within a word, as nothing (OD_WRAP_GLUE,
 *   which phrases skip).
 * Every offset and every later line keeps its place, and the scanner counts the folded
 * lines. Only LF breaks are rejoined. */
#include <assert.h>
#include <ctype.h>
#include <stdint.h>
#include <string.h>

#include "base/torchver.h"
#include "read/triage/scan.h"

#define starts od_tr_starts_exact
#define skip_sp od_tr_skip_sp

static const char *const wrap_words[] = {
    "device", "allocate", "allocated", "unallocated", "allocating", "allocation", "capacity", "capacty",
    "memory", "reserved", "PyTorch", "non-PyTorch", "process", "Process", "Including", "already", "cached",
    "available", "documentation", "Management", "fragmentation", "expandable_segments", "max_split_size_mb",
    "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF", "PYTORCH_HIP_ALLOC_CONF", "CUDA_ERROR_OUT_OF_MEMORY",
    "OutOfMemoryError", "RESOURCE_EXHAUSTED", "ResourceExhaustedError", "private", "allowed", "tensor",
    "failed", "total", "which", "Tried",
};


int od_tr_is_wrap_mark(char c)
{
    return c == OD_WRAP_LINE || c == OD_WRAP_NONE;
}

static int word_char(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '-';
}

/* Is [p, p+n) one of wrap_words (of either case)? */
static int wrap_word(const char *p, size_t n)
{
    for (size_t i = 0; i < sizeof wrap_words / sizeof wrap_words[0]; i++) {
        if (strlen(wrap_words[i]) != n)
            continue;
        size_t k = 0;
        while (k < n && OD_TR_FOLD(wrap_words[i][k]) == OD_TR_FOLD(p[k]))
            k++;
        if (k == n)
            return 1;
    }
    return 0;
}
/* Does the break between buf[..t) and buf[h..e) split one word or one two-decimal figure? */
static int wrap_splits(const char *buf, size_t t, size_t h, size_t e)
{
    size_t a = t, b = h;
    while (a > 0 && word_char(buf[a - 1]))
        a--;
    while (b < e && word_char(buf[b]))
        b++;
    size_t n1 = t - a, n2 = b - h;
    if (n1 && n2 && n1 + n2 <= 32 && !isdigit((unsigned char)buf[a]) && !isdigit((unsigned char)buf[h])) {
        char w[32];
        memcpy(w, buf + a, n1);
        memcpy(w + n1, buf + h, n2);
        return wrap_word(w, n1 + n2) && !(wrap_word(buf + a, n1) && wrap_word(buf + h, n2));
    }
    /* A figure: "12.4" + "0 GiB", "12." + "40 GiB", "12" + ".40 GiB" (always two decimals). */
    a = t;
    while (a > 0 && (isdigit((unsigned char)buf[a - 1]) || buf[a - 1] == '.'))
        a--;
    b = h;
    while (b < e && (isdigit((unsigned char)buf[b]) || buf[b] == '.'))
        b++;
    if (a == t || b == h || !isdigit((unsigned char)buf[a]))
        return 0;
    char num[40];
    if (t - a + b - h >= sizeof num)
        return 0;
    size_t n = 0, dots = 0, dec = 0;
    for (size_t i = a; i < t; i++)
        num[n++] = buf[i];
    for (size_t i = h; i < b; i++)
        num[n++] = buf[i];
    for (size_t i = 0; i < n; i++) {
        if (num[i] == '.')
            dots++;
        else if (dots)
            dec++;
    }
    if (dots != 1 || dec != 2 || num[n - 1] == '.')
        return 0;
    const char *u = buf + b;
    return b < e && *u == ' ' &&
           (starts(u + 1, buf + e, "GiB") || starts(u + 1, buf + e, "MiB") || starts(u + 1, buf + e, "KiB") ||
            starts(u + 1, buf + e, "TiB") || starts(u + 1, buf + e, "GB") || starts(u + 1, buf + e, "MB"));
}

/* Does a rules.def phrase run across the break between buf[..t) (a line's text) and
 * buf[h..e) (the next one's, its indentation skipped), read as a space (spaced) or as
 * nothing? */
static int phrase_crosses(const od_tr_index *ix, const char *buf, size_t t, size_t h, size_t e, int spaced)
{
    char win[2 * OD_TR_CROSS_SIDE + 1];
    size_t a = t;
    while (a > 0 && t - a < OD_TR_CROSS_SIDE && buf[a - 1] != '\n')
        a--;
    size_t k = e - h < OD_TR_CROSS_SIDE ? e - h : OD_TR_CROSS_SIDE, n = t - a;
    memcpy(win, buf + a, n);
    size_t at = n;
    if (spaced)
        win[n++] = ' ';
    memcpy(win + n, buf + h, k);
    return od_tr_crosses(ix, win, win + n + k, at);
}

/* Rejoin the wrapped lines of buf[0..len) in place (see above). Markers only ever end a
 * line this loop joined, so their counts are carried rather than re-read: a chain of k
 * joins costs O(k), not O(k^2). */
void od_tr_unwrap(const od_tr_index *ix, char *buf, size_t len)
{
    size_t i = 0, last_e = SIZE_MAX, last_k = 0, last_lines = 0, last_none = 0;
    while (i < len) {
        char *nl = memchr(buf + i, '\n', len - i);
        if (!nl)
            return;
        size_t n = (size_t)(nl - buf);
        int chained = n == last_e;
        size_t t = chained ? last_k : n;
        size_t h = n + 1;
        while (h < len && (buf[h] == ' ' || buf[h] == '\t'))
            h++;
        char *nl2 = h < len ? memchr(buf + h, '\n', len - h) : NULL;
        size_t e = nl2 ? (size_t)(nl2 - buf) : len;
        int figure = t > 0 && (isdigit((unsigned char)buf[t - 1]) || buf[t - 1] == '.');
        if (t == 0 || h >= e || (figure && h != n + 1) || !wrap_splits(buf, t, h, e)) {
            if (t > 0 && h < e && ix) {
                if (phrase_crosses(ix, buf, t, h, e, 1))
                    buf[n] = OD_WRAP_SOFT;
                else if (h == n + 1 && word_char(buf[t - 1]) && word_char(buf[h]) &&
                         phrase_crosses(ix, buf, t, h, e, 0))
                    buf[n] = OD_WRAP_GLUE;
            }
            i = n + 1;
            continue;
        }
        size_t lines = (chained ? last_lines : 0) + 1, none = (chained ? last_none : 0) + (h - (n + 1));
        memmove(buf + t, buf + h, e - h);
        size_t k = t + (e - h);
        memset(buf + k, OD_WRAP_LINE, lines);
        memset(buf + k + lines, OD_WRAP_NONE, none);
        assert(k + lines + none == e);
        last_e = e;
        last_k = k;
        last_lines = lines;
        last_none = none;
        i = e; /* the joined line may be wrapped again */
    }
}

/* Loggers and terminals wrap long messages: when the anchor line does not finish the
 * message, join up to OD_TORCH_MESSAGE_LINES - 1 following lines (indentation collapsed
 * to one space) into buf. Returns the end of the joined text, or NULL when the line is
 * complete by itself. */
const char *od_tr_join_message(const char *a, const char *le, const char *end, char *buf, size_t size)
{
    const char *p = memchr(le, '\n', (size_t)(end - le)); /* le may stop short of unwrap's markers */
    p = p ? p + 1 : end;
    if (od_torch_message_complete(a, le, p, end) || le >= end)
        return NULL;
    size_t n = (size_t)(le - a) < size - 1 ? (size_t)(le - a) : size - 1;
    memcpy(buf, a, n);
    /* Every anchor phrase ends "out of memory": without it, a word-wrap broke the phrase
     * and the next line holds its rest, not another report. */
    const char *broken = od_tr_ifind(a, le, "out of memory") ? NULL : p;
    for (int k = 0; k < OD_TORCH_MESSAGE_LINES - 1 && p < end && n + 2 < size; k++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *e = nl ? nl : end;
        while (e > p && od_tr_is_wrap_mark(e[-1]))
            e--;
        const char *q = skip_sp(p, e);
        if (q == e || starts(q, e, "Traceback") || starts(q, e, "File \"") ||
            (od_tr_ifind(q, e, "out of memory") && p != broken))
            break;
        buf[n++] = ' ';
        size_t l = (size_t)(e - q) < size - 1 - n ? (size_t)(e - q) : size - 1 - n;
        memcpy(buf + n, q, l);
        n += l;
        p = nl ? nl + 1 : end;
        if (od_torch_message_complete(buf, buf + n, p, end))
            break;
    }
    buf[n] = '\0';
    return buf + n;
}

/* The releases whose wording the PyTorch message at a (on the line that starts at line)
 * is in: read by od_torch_infer_message from this line on, as it was logged (the bytes
 * unwrap() left taken out, its soft breaks line breaks again). Only a message torchver dates
 * by its own opening phrase on this line is dated (a driver error's "CUDA error: out of
 * memory" is not, nor borrows the next message's date). */
void od_tr_date_message(od_oom_report *r, const char *a, const char *line, const char *end)
{
    char text[16384];
    size_t n = 0;
    int lines = 0; /* the message's lines, as many as od_torch_infer_message reads */
    const char *a_end = a;
    for (int k = 0; k < 64 && a_end < end && *a_end != '\n'; k++)
        a_end++;
    for (const char *p = a; p < a_end && n < sizeof text; p++)
        text[n++] = *p == OD_WRAP_SOFT || *p == OD_WRAP_GLUE ? '\n' : *p;
    if (!od_torch_message_starts(text, text + n))
        return;
    n = 0;
    for (const char *p = line; p < end && n < sizeof text && lines < OD_TORCH_MESSAGE_LINES; p++) {
        if (od_tr_is_wrap_mark(*p))
            continue;
        char c = *p == OD_WRAP_SOFT || *p == OD_WRAP_GLUE ? '\n' : *p;
        lines += (text[n++] = c) == '\n';
    }
    r->have_torch_range = od_torch_infer_message(text, n, &r->torch_range);
}

void od_tr_normalize(char *buf, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (buf[i] == '\0' || buf[i] == '\r' || (buf[i] >= OD_WRAP_LINE && buf[i] <= OD_WRAP_GLUE))
            buf[i] = ' ';
}
