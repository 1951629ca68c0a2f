/* jsonstream.c - pull reader for JSON from an od_input (see jsonstream.h). */
#include "base/jsonstream.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define BUF_SIZE (1u << 16)
/* Profiler documents nest a handful of levels; anything deeper is garbage. */
#define MAX_DEPTH 256
/* Longest string kept (op names with shapes are long; megabytes are not names). */
#define MAX_STRING (64u << 20)

struct od_js {
    od_input *in;
    unsigned char buf[BUF_SIZE];
    size_t pos, len;
    uint64_t base;          /* stream offset of buf[0] */
    int eof;
    od_status failed;
    od_error err;           /* the failure, replayed on later calls */
    char *str;
    size_t str_len, str_cap;
    unsigned char first[MAX_DEPTH]; /* per open container: no member read yet */
    char closer[MAX_DEPTH];
    int depth;
};

static od_status fail_at(od_js *js, od_error *err, od_status st, uint64_t off, const char *what)
{
    if (!js->failed) {
        od_fail_at(&js->err, st, off, "%s", what);
        js->failed = st;
    }
    if (err)
        *err = js->err;
    return js->failed;
}

static od_status replay(od_js *js, od_error *err)
{
    if (err)
        *err = js->err;
    return js->failed;
}

static int fill(od_js *js)
{
    if (js->eof)
        return 0;
    js->base += js->len;
    js->pos = 0;
    js->len = od_input_read(js->in, js->buf, BUF_SIZE);
    if (js->len == 0) {
        js->eof = 1;
        od_error e;
        if (od_input_error(js->in, &e) != OD_OK && !js->failed) {
            js->err = e;
            if (!js->err.has_offset) {
                js->err.has_offset = 1;
                js->err.offset = js->base;
            }
            js->failed = e.status;
        }
        return 0;
    }
    return 1;
}

/* Next byte or -1 at end. */
static inline int peekc(od_js *js)
{
    if (js->pos == js->len && !fill(js))
        return -1;
    return js->buf[js->pos];
}

static inline int getc_(od_js *js)
{
    if (js->pos == js->len && !fill(js))
        return -1;
    return js->buf[js->pos++];
}

uint64_t od_js_offset(const od_js *js)
{
    return js->base + js->pos;
}

static int skip_ws(od_js *js)
{
    for (;;) {
        int c = peekc(js);
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
            js->pos++;
            continue;
        }
        return c;
    }
}

od_status od_js_open(od_input *in, const void *prefix, size_t prefix_len, od_js **out, od_error *err)
{
    if (prefix_len > BUF_SIZE)
        return od_fail(err, OD_ERR_INTERNAL, "JSON reader prefix too long");
    od_js *js = calloc(1, sizeof *js);
    if (!js)
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    js->in = in;
    if (prefix_len)
        memcpy(js->buf, prefix, prefix_len);
    js->len = prefix_len;
    *out = js;
    return OD_OK;
}

void od_js_close(od_js *js)
{
    if (!js)
        return;
    free(js->str);
    free(js);
}

od_js_kind od_js_peek(od_js *js)
{
    if (js->failed)
        return OD_JS_BAD;
    int c = skip_ws(js);
    switch (c) {
    case -1: return js->failed ? OD_JS_BAD : OD_JS_EOF;
    case '{': return OD_JS_OBJECT;
    case '[': return OD_JS_ARRAY;
    case '"': return OD_JS_STRING;
    case 't': return OD_JS_TRUE;
    case 'f': return OD_JS_FALSE;
    case 'n': return OD_JS_NULL;
    default:
        if (c == '-' || (c >= '0' && c <= '9'))
            return OD_JS_NUMBER;
        return OD_JS_BAD;
    }
}

static od_status expect_value(od_js *js, od_error *err, int want, const char *what)
{
    int c = skip_ws(js);
    if (js->failed)
        return replay(js, err);
    if (c != want)
        return fail_at(js, err, OD_ERR_FORMAT, od_js_offset(js),
                       c < 0 ? "unexpected end of input (truncated file?)" : what);
    return OD_OK;
}

static od_status push(od_js *js, od_error *err, char closer)
{
    if (js->depth >= MAX_DEPTH)
        return fail_at(js, err, OD_ERR_LIMIT, od_js_offset(js), "JSON nested too deeply");
    js->first[js->depth] = 1;
    js->closer[js->depth] = closer;
    js->depth++;
    js->pos++;
    return OD_OK;
}

od_status od_js_begin_object(od_js *js, od_error *err)
{
    if (js->failed)
        return replay(js, err);
    od_status st = expect_value(js, err, '{', "expected a JSON object");
    return st ? st : push(js, err, '}');
}

od_status od_js_begin_array(od_js *js, od_error *err)
{
    if (js->failed)
        return replay(js, err);
    od_status st = expect_value(js, err, '[', "expected a JSON array");
    return st ? st : push(js, err, ']');
}

/* Shared by next_key/next_element: 1 another member, 0 closed, -1 error. */
static int next_member(od_js *js, od_error *err)
{
    if (js->failed || js->depth == 0) {
        if (!js->failed)
            fail_at(js, err, OD_ERR_INTERNAL, od_js_offset(js), "no open JSON container");
        replay(js, err);
        return -1;
    }
    int d = js->depth - 1;
    int c = skip_ws(js);
    if (c == js->closer[d]) {
        js->pos++;
        js->depth--;
        return 0;
    }
    if (c < 0) {
        fail_at(js, err, OD_ERR_FORMAT, od_js_offset(js), "unexpected end of input (truncated file?)");
        return -1;
    }
    if (!js->first[d]) {
        if (c != ',') {
            fail_at(js, err, OD_ERR_FORMAT, od_js_offset(js),
                    js->closer[d] == '}' ? "expected ',' or '}' in an object" : "expected ',' or ']' in an array");
            return -1;
        }
        js->pos++;
    }
    js->first[d] = 0;
    return 1;
}

int od_js_next_key(od_js *js, const char **key, size_t *key_len, od_error *err)
{
    int r = next_member(js, err);
    if (r <= 0)
        return r;
    if (od_js_peek(js) != OD_JS_STRING) {
        fail_at(js, err, OD_ERR_FORMAT, od_js_offset(js), "expected a string key in an object");
        return -1;
    }
    if (od_js_string(js, key, key_len, err) != OD_OK)
        return -1;
    if (expect_value(js, err, ':', "expected ':' after an object key") != OD_OK)
        return -1;
    js->pos++;
    return 1;
}

int od_js_next_element(od_js *js, od_error *err)
{
    return next_member(js, err);
}

static int str_put(od_js *js, char c)
{
    if (js->str_len + 1 >= js->str_cap) {
        if (js->str_cap >= MAX_STRING)
            return 0;
        size_t nc = js->str_cap ? js->str_cap * 2 : 256;
        char *ns = realloc(js->str, nc);
        if (!ns)
            return -1;
        js->str = ns;
        js->str_cap = nc;
    }
    js->str[js->str_len++] = c;
    return 1;
}

static int hex4(od_js *js, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        int c = getc_(js);
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return 0;
    }
    *out = v;
    return 1;
}

/* Read a string into js->str; keep=0 only validates (skipping long args cheaply). */
static od_status read_string(od_js *js, od_error *err, int keep)
{
    uint64_t start = od_js_offset(js);
    js->str_len = 0;
    js->pos++; /* the opening quote, already peeked */
    for (;;) {
        if (!keep) {
            /* Fast path for skipped strings: run over plain bytes inside the buffer. */
            const unsigned char *b = js->buf + js->pos, *e = js->buf + js->len;
            while (b < e && *b != '"' && *b != '\\' && *b >= 0x20)
                b++;
            js->pos = (size_t)(b - js->buf);
        }
        int c = getc_(js);
        if (c < 0)
            return fail_at(js, err, OD_ERR_FORMAT, start, "unterminated string (truncated file?)");
        if (c == '"')
            break;
        if (c < 0x20)
            return fail_at(js, err, OD_ERR_FORMAT, od_js_offset(js) - 1, "control character inside a string");
        if (c == '\\') {
            int e = getc_(js);
            unsigned cp = 0;
            switch (e) {
            case '"': case '\\': case '/': c = e; break;
            case 'b': c = '\b'; break;
            case 'f': c = '\f'; break;
            case 'n': c = '\n'; break;
            case 'r': c = '\r'; break;
            case 't': c = '\t'; break;
            case 'u':
                if (!hex4(js, &cp))
                    return fail_at(js, err, OD_ERR_FORMAT, od_js_offset(js), "bad \\u escape in a string");
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    unsigned lo = 0;
                    if (getc_(js) != '\\' || getc_(js) != 'u' || !hex4(js, &lo) || lo < 0xDC00 || lo > 0xDFFF)
                        return fail_at(js, err, OD_ERR_FORMAT, od_js_offset(js), "unpaired surrogate in a string");
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                }
                if (keep) {
                    /* UTF-8 encode; a NUL becomes '?' so names stay C strings. */
                    char u[4];
                    int n;
                    if (cp == 0) { u[0] = '?'; n = 1; }
                    else if (cp < 0x80) { u[0] = (char)cp; n = 1; }
                    else if (cp < 0x800) { u[0] = (char)(0xC0 | (cp >> 6)); u[1] = (char)(0x80 | (cp & 0x3F)); n = 2; }
                    else if (cp < 0x10000) { u[0] = (char)(0xE0 | (cp >> 12)); u[1] = (char)(0x80 | ((cp >> 6) & 0x3F)); u[2] = (char)(0x80 | (cp & 0x3F)); n = 3; }
                    else { u[0] = (char)(0xF0 | (cp >> 18)); u[1] = (char)(0x80 | ((cp >> 12) & 0x3F)); u[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); u[3] = (char)(0x80 | (cp & 0x3F)); n = 4; }
                    for (int i = 0; i < n; i++) {
                        int r = str_put(js, u[i]);
                        if (r <= 0)
                            return fail_at(js, err, r < 0 ? OD_ERR_NOMEM : OD_ERR_LIMIT, start,
                                           r < 0 ? "out of memory" : "string longer than 64 MiB");
                    }
                }
                continue;
            default:
                return fail_at(js, err, OD_ERR_FORMAT, od_js_offset(js) - 1, "bad escape in a string");
            }
        }
        if (keep) {
            int r = str_put(js, (char)c);
            if (r <= 0)
                return fail_at(js, err, r < 0 ? OD_ERR_NOMEM : OD_ERR_LIMIT, start,
                               r < 0 ? "out of memory" : "string longer than 64 MiB");
        }
    }
    if (keep) {
        /* terminate: str_put reserves room for one more byte */
        int r = str_put(js, 0);
        if (r <= 0)
            return fail_at(js, err, r < 0 ? OD_ERR_NOMEM : OD_ERR_LIMIT, start,
                           r < 0 ? "out of memory" : "string longer than 64 MiB");
        js->str_len--;
    }
    return OD_OK;
}

od_status od_js_string(od_js *js, const char **s, size_t *len, od_error *err)
{
    if (js->failed)
        return replay(js, err);
    if (od_js_peek(js) != OD_JS_STRING)
        return fail_at(js, err, OD_ERR_FORMAT, od_js_offset(js), "expected a string");
    od_status st = read_string(js, err, 1);
    if (st)
        return st;
    *s = js->str;
    if (len)
        *len = js->str_len;
    return OD_OK;
}

od_status od_js_number_read(od_js *js, od_js_number *n, od_error *err)
{
    if (js->failed)
        return replay(js, err);
    if (od_js_peek(js) != OD_JS_NUMBER)
        return fail_at(js, err, OD_ERR_FORMAT, od_js_offset(js), "expected a number");
    uint64_t start = od_js_offset(js);
    char tmp[64];
    size_t k = 0;
    int neg = 0, frac = 0, expo = 0, ndig = 0;
    uint64_t ipart = 0;
    int ovf = 0;
    int64_t fr = 0;   /* first three fraction digits */
    int nfr = 0, round_up = 0;
    int c = peekc(js);
    if (c == '-') {
        neg = 1;
        tmp[k++] = '-';
        js->pos++;
    }
    for (;;) {
        c = peekc(js);
        if (c >= '0' && c <= '9') {
            if (k < sizeof tmp - 1)
                tmp[k++] = (char)c;
            js->pos++;
            if (!frac && !expo) {
                ndig++;
                if (ipart > (UINT64_MAX - 9) / 10)
                    ovf = 1;
                else
                    ipart = ipart * 10 + (uint64_t)(c - '0');
            } else if (frac && !expo) {
                if (nfr < 3) {
                    fr = fr * 10 + (c - '0');
                    nfr++;
                } else if (nfr == 3) {
                    round_up = c >= '5';
                    nfr++;
                }
            }
        } else if (c == '.' && !frac && !expo && ndig) {
            frac = 1;
            if (k < sizeof tmp - 1)
                tmp[k++] = '.';
            js->pos++;
        } else if ((c == 'e' || c == 'E') && !expo && ndig) {
            expo = 1;
            if (k < sizeof tmp - 1)
                tmp[k++] = 'e';
            js->pos++;
            c = peekc(js);
            if (c == '+' || c == '-') {
                if (k < sizeof tmp - 1)
                    tmp[k++] = (char)c;
                js->pos++;
            }
        } else {
            break;
        }
    }
    tmp[k] = 0;
    if (!ndig || tmp[k - 1] == '.' || tmp[k - 1] == 'e' || tmp[k - 1] == '+' || tmp[k - 1] == '-')
        return fail_at(js, err, OD_ERR_FORMAT, start, "malformed number");
    n->value = strtod(tmp, NULL);
    n->is_int = !frac && !expo && !ovf && ipart <= (uint64_t)INT64_MAX;
    /* Beyond int64's range (1e999 is +inf) the cast would be undefined: saturate. */
    if (n->is_int)
        n->i = neg ? -(int64_t)ipart : (int64_t)ipart;
    else if (n->value >= 9223372036854775807.0)
        n->i = INT64_MAX;
    else if (n->value <= -9223372036854775808.0)
        n->i = INT64_MIN;
    else
        n->i = isnan(n->value) ? 0 : (int64_t)n->value;
    n->milli_ok = 0;
    if (!expo && !ovf && ipart <= (uint64_t)(INT64_MAX / 1000 - 1)) {
        while (nfr < 3) {
            fr *= 10;
            nfr++;
        }
        int64_t m = (int64_t)ipart * 1000 + fr + round_up;
        n->milli = neg ? -m : m;
        n->milli_ok = 1;
    } else if (isfinite(n->value) && fabs(n->value) < 9e15) {
        n->milli = (int64_t)llround(n->value * 1000.0);
        n->milli_ok = 1;
    }
    return OD_OK;
}

static od_status literal(od_js *js, od_error *err, const char *word)
{
    uint64_t start = od_js_offset(js);
    for (const char *p = word; *p; p++)
        if (getc_(js) != *p)
            return fail_at(js, err, OD_ERR_FORMAT, start, "invalid literal (expected true, false or null)");
    return OD_OK;
}

od_status od_js_skip(od_js *js, od_error *err)
{
    if (js->failed)
        return replay(js, err);
    int base = js->depth;
    do {
        if (js->depth > base) {
            int r = next_member(js, err);
            if (r < 0)
                return js->failed;
            if (r == 0)
                continue;
            if (js->closer[js->depth - 1] == '}') {
                if (od_js_peek(js) != OD_JS_STRING)
                    return fail_at(js, err, OD_ERR_FORMAT, od_js_offset(js), "expected a string key in an object");
                if (read_string(js, err, 0))
                    return js->failed;
                if (expect_value(js, err, ':', "expected ':' after an object key"))
                    return js->failed;
                js->pos++;
            }
        }
        switch (od_js_peek(js)) {
        case OD_JS_OBJECT:
            if (push(js, err, '}'))
                return js->failed;
            break;
        case OD_JS_ARRAY:
            if (push(js, err, ']'))
                return js->failed;
            break;
        case OD_JS_STRING:
            if (read_string(js, err, 0))
                return js->failed;
            break;
        case OD_JS_NUMBER: {
            /* Skipped numbers are only checked for their shape: no conversion. */
            uint64_t at = od_js_offset(js);
            int c = peekc(js), digits = 0, bad = 0, prev = 0;
            if (c == '-')
                js->pos++;
            while ((c = peekc(js)) >= 0 && ((c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' ||
                                            ((c == '+' || c == '-') && (prev == 'e' || prev == 'E')))) {
                digits += c >= '0' && c <= '9';
                js->pos++;
                prev = c;
            }
            bad = !digits || !((prev >= '0' && prev <= '9'));
            if (bad)
                return fail_at(js, err, OD_ERR_FORMAT, at, "malformed number");
            break;
        }
        case OD_JS_TRUE:
            if (literal(js, err, "true"))
                return js->failed;
            break;
        case OD_JS_FALSE:
            if (literal(js, err, "false"))
                return js->failed;
            break;
        case OD_JS_NULL:
            if (literal(js, err, "null"))
                return js->failed;
            break;
        case OD_JS_EOF:
            return fail_at(js, err, OD_ERR_FORMAT, od_js_offset(js), "unexpected end of input (truncated file?)");
        default:
            if (js->failed)
                return replay(js, err);
            return fail_at(js, err, OD_ERR_FORMAT, od_js_offset(js), "expected a JSON value");
        }
    } while (js->depth > base);
    return OD_OK;
}

od_status od_js_end(od_js *js, od_error *err)
{
    if (js->failed)
        return replay(js, err);
    if (skip_ws(js) >= 0)
        return fail_at(js, err, OD_ERR_FORMAT, od_js_offset(js), "unexpected data after the JSON document");
    if (js->failed)
        return replay(js, err);
    return OD_OK;
}
