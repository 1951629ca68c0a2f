/* textsafe.c - escaping, UTF-8 cuts, short paths and line wrapping for text output. */
#include "base/textsafe.h"

#include <stdio.h>
#include <string.h>

/* Output into a caller's buffer in whole units (a character, an escape): a unit that does
 * not fit stops the writing, the count goes on. */
typedef struct {
    char *buf;
    size_t size;
    size_t need;  /* length of the whole result */
    size_t wrote; /* bytes written, all of them whole units */
    int full;
} sink;

static void sink_init(sink *k, char *buf, size_t size)
{
    k->buf = buf;
    k->size = size;
    k->need = k->wrote = 0;
    k->full = size == 0;
}

static void put(sink *k, const char *p, size_t n)
{
    if (!k->full && k->wrote + n < k->size) {
        memcpy(k->buf + k->wrote, p, n);
        k->wrote += n;
    } else {
        k->full = 1;
    }
    k->need += n;
}

static void put_spaces(sink *k, size_t n)
{
    for (size_t i = 0; i < n; i++)
        put(k, " ", 1);
}

static size_t sink_end(sink *k)
{
    if (k->size)
        k->buf[k->wrote] = 0;
    return k->need;
}

size_t od_utf8_decode(const char *s, size_t len, uint32_t *cp)
{
    const unsigned char *u = (const unsigned char *)s;
    if (len == 0)
        return 0;
    unsigned c = u[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    size_t n;
    uint32_t v, min;
    if (c >= 0xc2 && c <= 0xdf)
        n = 2, v = c & 0x1f, min = 0x80;
    else if (c >= 0xe0 && c <= 0xef)
        n = 3, v = c & 0x0f, min = 0x800;
    else if (c >= 0xf0 && c <= 0xf4)
        n = 4, v = c & 0x07, min = 0x10000;
    else
        return 0;
    if (len < n)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((u[i] & 0xc0) != 0x80)
            return 0;
        v = (v << 6) | (u[i] & 0x3f);
    }
    if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
        return 0;
    *cp = v;
    return n;
}

int od_utf8_valid(const char *s, size_t len)
{
    uint32_t cp;
    for (size_t i = 0; i < len;) {
        size_t n = od_utf8_decode(s + i, len - i, &cp);
        if (!n)
            return 0;
        i += n;
    }
    return 1;
}

size_t od_utf8_cut(const char *s, size_t len, size_t max)
{
    if (len <= max)
        return len;
    size_t i = 0;
    uint32_t cp;
    for (;;) {
        size_t n = od_utf8_decode(s + i, len - i, &cp);
        if (!n)
            n = 1;
        if (i + n > max)
            return i;
        i += n;
    }
}

size_t od_utf8_trim(const char *s, size_t len)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t back = 1; back <= 4 && back <= len; back++) {
        unsigned c = u[len - back];
        if ((c & 0xc0) == 0x80)
            continue; /* a continuation byte: look further back */
        size_t need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
        return need > back ? len - back : len;
    }
    return len;
}

size_t od_utf8_sanitize(const char *s, size_t len, char *buf, size_t size)
{
    sink k;
    sink_init(&k, buf, size);
    uint32_t cp;
    for (size_t i = 0; i < len;) {
        size_t n = od_utf8_decode(s + i, len - i, &cp);
        if (n) {
            put(&k, s + i, n);
            i += n;
        } else {
            put(&k, "\xef\xbf\xbd", 3); /* U+FFFD */
            i++;
        }
    }
    return sink_end(&k);
}

/* The escape for one unit at s (n: its length, cp its code point; n 0: an invalid byte),
 * into e; 0 when it is shown as it is. */
static int escape_of(const char *s, size_t n, uint32_t cp, unsigned flags, char e[16])
{
    if (!n)
        return snprintf(e, 16, "\\x%02x", (unsigned char)s[0]);
    if (cp == 0x1b)
        return snprintf(e, 16, "\\e");
    if (cp == '\n')
        return snprintf(e, 16, "\\n");
    if (cp == '\t')
        return snprintf(e, 16, "\\t");
    if (cp == '\r')
        return snprintf(e, 16, "\\r");
    if (cp == '\\' && (flags & OD_ESC_BACKSLASH))
        return snprintf(e, 16, "\\\\");
    if (cp < 0x20 || cp == 0x7f)
        return snprintf(e, 16, "\\x%02x", (unsigned)cp);
    if ((cp >= 0x80 && cp <= 0x9f) || (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069))
        return snprintf(e, 16, "\\u{%04x}", (unsigned)cp);
    return 0;
}

size_t od_text_escape(const char *s, size_t len, unsigned flags, char *buf, size_t size)
{
    sink k;
    sink_init(&k, buf, size);
    uint32_t cp = 0;
    for (size_t i = 0; i < len;) {
        size_t n = od_utf8_decode(s + i, len - i, &cp);
        char e[16];
        int m = escape_of(s + i, n, cp, flags, e);
        if (m > 0)
            put(&k, e, (size_t)m);
        else
            put(&k, s + i, n);
        i += n ? n : 1;
    }
    return sink_end(&k);
}

int od_text_is_safe(const char *s, size_t len, unsigned flags)
{
    uint32_t cp = 0;
    for (size_t i = 0; i < len;) {
        size_t n = od_utf8_decode(s + i, len - i, &cp);
        char e[16];
        if (escape_of(s + i, n, cp, flags, e) > 0)
            return 0;
        i += n;
    }
    return 1;
}

int od_char_width(uint32_t cp)
{
    /* Combining marks and zero-width characters. */
    if ((cp >= 0x0300 && cp <= 0x036f) || (cp >= 0x1ab0 && cp <= 0x1aff) || (cp >= 0x1dc0 && cp <= 0x1dff) ||
        (cp >= 0x200b && cp <= 0x200f) || (cp >= 0x20d0 && cp <= 0x20ff) || (cp >= 0xfe00 && cp <= 0xfe0f) ||
        (cp >= 0xfe20 && cp <= 0xfe2f) || cp == 0xfeff)
        return 0;
    /* East Asian wide and fullwidth (the blocks of Unicode's EastAsianWidth W and F that
     * text meets), and the emoji blocks. */
    if ((cp >= 0x1100 && cp <= 0x115f) || (cp >= 0x2e80 && cp <= 0x303e) || (cp >= 0x3041 && cp <= 0x33ff) ||
        (cp >= 0x3400 && cp <= 0x4dbf) || (cp >= 0x4e00 && cp <= 0x9fff) || (cp >= 0xa000 && cp <= 0xa4cf) ||
        (cp >= 0xac00 && cp <= 0xd7a3) || (cp >= 0xf900 && cp <= 0xfaff) || (cp >= 0xfe30 && cp <= 0xfe4f) ||
        (cp >= 0xff00 && cp <= 0xff60) || (cp >= 0xffe0 && cp <= 0xffe6) || (cp >= 0x1f300 && cp <= 0x1f64f) ||
        (cp >= 0x1f900 && cp <= 0x1f9ff) || (cp >= 0x20000 && cp <= 0x3fffd))
        return 2;
    return 1;
}

/* The length of the SGR sequence (ESC [ digits and ';' m) at s, or 0. */
static size_t sgr_len(const char *s, size_t len)
{
    if (len < 3 || s[0] != 0x1b || s[1] != '[')
        return 0;
    for (size_t i = 2; i < len; i++) {
        if (s[i] == 'm')
            return i + 1;
        if (!((s[i] >= '0' && s[i] <= '9') || s[i] == ';'))
            return 0;
    }
    return 0;
}

/* One unit of text at s: its byte length and its columns (an SGR sequence: 0). */
static size_t unit_at(const char *s, size_t len, size_t *cols)
{
    size_t q = sgr_len(s, len);
    if (q) {
        *cols = 0;
        return q;
    }
    uint32_t cp;
    size_t n = od_utf8_decode(s, len, &cp);
    if (!n) {
        *cols = 1;
        return 1;
    }
    *cols = (size_t)od_char_width(cp);
    return n;
}

size_t od_text_width(const char *s, size_t len)
{
    size_t w = 0, c;
    for (size_t i = 0; i < len;) {
        i += unit_at(s + i, len - i, &c);
        w += c;
    }
    return w;
}

static int has_package_dir(const char *p, const char **after)
{
    static const char *const dirs[] = {"site-packages/", "dist-packages/", "site-packages\\", "dist-packages\\"};
    const char *best = NULL;
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
        for (const char *q = strstr(p, dirs[i]); q; q = strstr(q + 1, dirs[i]))
            if ((q == p || q[-1] == '/' || q[-1] == '\\') && (!best || q + strlen(dirs[i]) > best))
                best = q + strlen(dirs[i]);
    }
    *after = best;
    return best != NULL;
}

const char *od_path_short(const char *path, const char *cwd)
{
    const char *after;
    if (!path)
        return path;
    if (has_package_dir(path, &after) && *after)
        return after;
    size_t n = cwd ? strlen(cwd) : 0;
    while (n > 1 && cwd[n - 1] == '/')
        n--;
    if (n > 1 && strncmp(path, cwd, n) == 0 && path[n] == '/' && path[n + 1])
        return path + n + 1;
    return path;
}

static int path_delim(char c)
{
    return c == ' ' || c == '(' || c == '[' || c == '\'' || c == '"' || c == '=' || c == ',' || c == '\t';
}

size_t od_text_shorten_paths(const char *text, size_t len, const char *cwd, char *buf, size_t size)
{
    sink k;
    sink_init(&k, buf, size);
    size_t n = cwd ? strlen(cwd) : 0;
    while (n > 1 && cwd[n - 1] == '/')
        n--;
    for (size_t i = 0; i < len;) {
        if (i > 0 && !path_delim(text[i - 1])) {
            put(&k, text + i, 1);
            i++;
            continue;
        }
        /* A token starts here: how far it goes, and what of it to drop. */
        size_t e = i;
        while (e < len && !path_delim(text[e]) && text[e] != ')' && text[e] != ']')
            e++;
        size_t skip = 0;
        static const char *const dirs[] = {"site-packages/", "dist-packages/", "site-packages\\", "dist-packages\\"};
        for (size_t d = 0; d < sizeof dirs / sizeof *dirs; d++) {
            size_t dl = strlen(dirs[d]);
            for (size_t j = i; j + dl <= e; j++)
                if (memcmp(text + j, dirs[d], dl) == 0 && j > i && (text[j - 1] == '/' || text[j - 1] == '\\') &&
                    j + dl < e && j + dl - i > skip)
                    skip = j + dl - i;
        }
        if (!skip && n > 1 && e - i > n + 1 && memcmp(text + i, cwd, n) == 0 && text[i + n] == '/')
            skip = n + 1;
        put(&k, text + i + skip, e - i - skip);
        i = e;
        if (i < len) { /* the delimiter after the token */
            put(&k, text + i, 1);
            i++;
        }
    }
    return sink_end(&k);
}

/* ---- wrapping ---- */

/* A line drawn in place or holding controls is left alone. */
static int wrappable(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == 0x1b) {
            size_t q = sgr_len(s + i, len - i);
            if (!q)
                return 0;
            i += q - 1;
        } else if (c < 0x20 || c == 0x7f) {
            return 0;
        }
    }
    return 1;
}

/* 1 when the space at s[j] joins a number to its unit ("1.40 MiB", "0.882 s"): no break
 * there, a size never reads "1.40" at the end of one line and "MiB" at the start of the
 * next. */
static int glued(const char *s, size_t len, size_t j)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "KB", "MB", "GB", "TB",
                                        "s", "ms", "us", "min", "h", "%", "B/s", "KiB/s", "MiB/s", "GiB/s"};
    if (j == 0 || s[j - 1] < '0' || s[j - 1] > '9')
        return 0;
    size_t e = j + 1;
    while (e < len && s[e] != ' ' && s[e] != ',' && s[e] != ';' && s[e] != ')' && s[e] != ':')
        e++;
    for (size_t i = 0; i < sizeof units / sizeof *units; i++)
        if (strlen(units[i]) == e - j - 1 && memcmp(s + j + 1, units[i], e - j - 1) == 0)
            return 1;
    return 0;
}

/* The column continuation lines start at (see od_text_wrap). */
static size_t hanging_indent(const char *s, size_t len, size_t width)
{
    size_t i = 0, col = 0, c;
    while (i < len && s[i] == ' ')
        i++, col++;
    size_t lead = col, marker = lead;
    if (i + 1 < len && (s[i] == '-' || s[i] == '*') && s[i + 1] == ' ') {
        marker = lead + 2;
    } else {
        size_t j = i;
        while (j < len && s[j] >= '0' && s[j] <= '9')
            j++;
        if (j > i && j - i <= 3 && j + 1 < len && (s[j] == '.' || s[j] == ')') && s[j + 1] == ' ')
            marker = lead + (j - i) + 2;
    }
    /* The last field: the text after the last run of 2+ spaces within the first line. */
    size_t field = 0, run = 0;
    for (; i < len && col < width;) {
        size_t n = unit_at(s + i, len - i, &c);
        if (s[i] == ' ') {
            run++;
        } else {
            if (run >= 2 && col > lead)
                field = col;
            run = 0;
        }
        i += n;
        col += c;
    }
    /* No marker and no field: two columns in, so a continuation never reads as a line of
     * its own. At least 30 columns stay for the text (half the width when narrower). */
    size_t cap = width >= 60 ? width - 30 : width / 2;
    size_t indent = field > marker ? field : marker > lead ? marker : lead + 2;
    if (indent > cap)
        indent = marker > lead && marker <= cap ? marker : lead + 2 <= cap ? lead + 2 : 0;
    return indent;
}

size_t od_text_wrap(const char *s, size_t len, size_t width, char *buf, size_t size)
{
    sink k;
    sink_init(&k, buf, size);
    if (width < 20 || od_text_width(s, len) <= width || !wrappable(s, len)) {
        put(&k, s, len);
        return sink_end(&k);
    }
    size_t indent = hanging_indent(s, len, width);
    size_t i = 0, first = 1;
    while (i < len) {
        size_t start_col = first ? 0 : indent;
        if (!first) {
            while (i < len && s[i] == ' ')
                i++; /* the spaces at a break go */
            if (i == len)
                break;
            put(&k, "\n", 1);
            put_spaces(&k, indent);
        }
        /* How far this line goes: the last space that keeps it within width, else (one
         * word longer than the line) the last '/' within it, else as far as fits. */
        size_t j = i, col = start_col, c, last_space = 0, last_slash = 0, space_col = 0;
        int any_space = 0, any_slash = 0, text = 0;
        while (j < len) {
            size_t n = unit_at(s + j, len - j, &c);
            if (col + c > width)
                break;
            if (s[j] != ' ')
                text = 1;
            if (s[j] == ' ' && text && !glued(s, len, j)) {
                last_space = j;
                space_col = col;
                any_space = 1;
            } else if ((s[j] == '/' || s[j] == '\\' || s[j] == ':' || s[j] == ',' || s[j] == '=') && j > i) {
                last_slash = j + 1;
                any_slash = 1;
            }
            col += c;
            j += n;
        }
        size_t end;
        /* A table row whose last field does not fit: the field's word is broken on this
         * line rather than the row ending where the field would begin. */
        if (j == len)
            end = len;
        else if (any_space && !(first && any_slash && last_slash > last_space && space_col <= indent + 1))
            end = last_space;
        else if (any_slash)
            end = last_slash;
        else
            end = j > i ? j : i + unit_at(s + i, len - i, &c); /* at least one unit */
        /* Drop trailing spaces before the break. */
        size_t e = end;
        while (e > i && s[e - 1] == ' ' && end != len)
            e--;
        put(&k, s + i, e - i);
        i = end;
        first = 0;
    }
    return sink_end(&k);
}
