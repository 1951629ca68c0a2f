/* stats.c - memory_stats() dicts: a whole input that is one JSON dump (PyTorch's
 * torch.cuda.memory_stats() or JAX's device.memory_stats()), or the dicts Python printed in a
 * log, read a line at a time. */
#include <ctype.h>
#include <jansson.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "read/profile.h"
#include "read/triage/scan.h"

#define starts od_tr_starts_exact
#define skip_sp od_tr_skip_sp
#define parse_uint od_tr_parse_uint
#define find od_tr_find_exact

static int u64_of(const json_t *v, uint64_t *out)
{
    if (json_is_integer(v) && json_integer_value(v) >= 0) {
        *out = (uint64_t)json_integer_value(v);
        return 1;
    }
    if (json_is_real(v) && json_real_value(v) >= 0 && json_real_value(v) < 1.8e19) {
        *out = (uint64_t)json_real_value(v);
        return 1;
    }
    return 0;
}

static int get_u64(json_t *o, const char *key, uint64_t *out)
{
    return u64_of(json_object_get(o, key), out);
}

/* The keys PyTorch's memory_stats figures are read from (torch.cuda.memory_stats), each
 * into its field of od_mem_stats; JAX's are profile.c's (od_jax_stats_set). */
static const struct { const char *k; unsigned bit; size_t at; } stats_keys[] = {
    {"allocated_bytes.all.current", OD_MS_ALLOCATED, offsetof(od_mem_stats, allocated_bytes)},
    {"allocated_bytes.all.peak", OD_MS_ALLOCATED_PEAK, offsetof(od_mem_stats, allocated_peak_bytes)},
    {"reserved_bytes.all.current", OD_MS_RESERVED, offsetof(od_mem_stats, reserved_bytes)},
    {"reserved_bytes.all.peak", OD_MS_RESERVED_PEAK, offsetof(od_mem_stats, reserved_peak_bytes)},
    {"inactive_split_bytes.all.current", OD_MS_INACTIVE, offsetof(od_mem_stats, inactive_split_bytes)},
    {"num_ooms", OD_MS_OOMS, offsetof(od_mem_stats, ooms)},
    {"num_alloc_retries", OD_MS_RETRIES, offsetof(od_mem_stats, retries)},
};
#define N_STATS_KEYS (sizeof stats_keys / sizeof stats_keys[0])

/* Whether stats_from reads key. */
static int is_stats_key(const char *key)
{
    for (size_t i = 0; i < N_STATS_KEYS; i++)
        if (key[0] == stats_keys[i].k[0] && !strcmp(key, stats_keys[i].k))
            return 1;
    od_profile_stats scratch;
    return od_jax_stats_set(&scratch, key, 0);
}

/* JAX's figures in od_mem_stats' terms: in use is allocated, the pool is reserved. */
static void jax_into(const od_profile_stats *j, od_mem_stats *m)
{
#define TAKE(has, field, bit, value)  \
    if (j->has) {                      \
        m->field = j->value;           \
        m->have |= (bit);              \
    }
    TAKE(has_bytes_in_use, allocated_bytes, OD_MS_ALLOCATED, bytes_in_use)
    TAKE(has_peak_bytes_in_use, allocated_peak_bytes, OD_MS_ALLOCATED_PEAK, peak_bytes_in_use)
    TAKE(has_pool_bytes, reserved_bytes, OD_MS_RESERVED, pool_bytes)
    TAKE(has_peak_pool_bytes, reserved_peak_bytes, OD_MS_RESERVED_PEAK, peak_pool_bytes)
    TAKE(has_bytes_limit, limit_bytes, OD_MS_LIMIT, bytes_limit)
    TAKE(has_largest_free_block_bytes, largest_free_block_bytes, OD_MS_LARGEST_FREE, largest_free_block_bytes)
#undef TAKE
}

/* Fill *m from the memory_stats dict o; returns whether o is one (PyTorch: allocated or
 * reserved; JAX: bytes in use, and a limit or a peak). */
static int stats_from(json_t *o, od_mem_stats *m)
{
    memset(m, 0, sizeof *m);
    for (size_t i = 0; i < N_STATS_KEYS; i++)
        if (get_u64(o, stats_keys[i].k, (uint64_t *)((char *)m + stats_keys[i].at)))
            m->have |= stats_keys[i].bit;
    if (m->have & (OD_MS_ALLOCATED | OD_MS_RESERVED))
        return 1;
    memset(m, 0, sizeof *m);
    m->jax = 1;
    od_profile_stats j;
    memset(&j, 0, sizeof j);
    const char *k;
    json_t *v;
    uint64_t x;
    json_object_foreach(o, k, v) {
        if (u64_of(v, &x))
            od_jax_stats_set(&j, k, x);
    }
    jax_into(&j, m);
    return (m->have & OD_MS_ALLOCATED) && (m->have & (OD_MS_LIMIT | OD_MS_ALLOCATED_PEAK));
}

void od_tr_scan_stats(tr_scan *s, const char *text, size_t len, const od_mem_stats *py)
{
    const char *p = text;
    json_t *root = NULL;
    od_mem_stats m;
    int found = 0;
    while (text && p < text + len && isspace((unsigned char)*p))
        p++;
    if (text && p < text + len && *p == '{') {
        json_error_t je;
        root = json_loadb(text, len, JSON_DECODE_ANY, &je);
        found = json_is_object(root) && stats_from(root, &m);
    }
    if (!found && json_is_object(root)) {
        /* One level down: {"memory_stats": {...}} or {"cuda:0": {...}}. */
        const char *k;
        json_t *v;
        json_object_foreach(root, k, v) {
            if (json_is_object(v) && stats_from(v, &m)) {
                found = 1;
                break;
            }
        }
    }
    json_decref(root);
    if (!found && py) {
        m = *py;
        found = 1;
    }
    if (!found)
        return;
    s->t->stats = malloc(sizeof *s->t->stats);
    if (!s->t->stats) {
        s->nomem = 1;
        return;
    }
    *s->t->stats = m;
}
/* ---------- memory_stats() as Python prints it ----------
 * print(torch.cuda.memory_stats()) gives "OrderedDict([('key', value), ...])" on Python
 * <= 3.11, "OrderedDict({'key': value, ...})" on 3.12+, and "{'key': value, ...}" for a
 * dict(); pprint puts one entry per line. The literal is read a line at a time, in the
 * same way by the whole-text scan and the stream (which so needs none of its lines kept),
 * into a JSON object that stats_from reads as it reads a JSON dump. Strings and figures
 * never span a line break (Python never breaks them); an entry counts once the token
 * after its value closes it, so a paste cut short loses its last figure rather than reading
 * part of it. */

#define REPR_MAX_ENTRIES 4096  /* torch 2.x prints about 120 */

enum {
    R_IDLE,       /* outside a literal: looking for one */
    R_INNER,      /* after "OrderedDict(": '[', '{' or ')' */
    R_ITEM,       /* a key (dict) or '(' (list); or the close */
    R_KEY,        /* list form: the key after '(' */
    R_SEP,        /* ':' (dict) or ',' (list) */
    R_VALUE,
    R_TUPLE_END,  /* list form: ')' after the value */
    R_NEXT,       /* ',' or the close */
    R_OUTER       /* ')' closing "OrderedDict(" */
};


void od_repr_drop(od_repr_reader *r)
{
    json_decref(r->obj);
    json_decref(r->value);
    r->obj = r->value = NULL;
    r->entries = 0;
    r->expect = R_IDLE;
}

/* The literal ends (closed, or cut short by what is not Python): keep its figures when it
 * is a memory_stats dict. */
static void repr_close(od_repr_reader *r, int complete)
{
    od_mem_stats m;
    if (r->obj && stats_from(r->obj, &m)) {
        m.cut_short = !complete;
        r->m = m;
        r->found = 1;
    }
    od_repr_drop(r);
}

/* The entry's value is closed by the token after it. */
static void repr_commit(od_repr_reader *r)
{
    if (r->want && r->value && !r->obj && !(r->obj = json_object()))
        r->nomem = 1;
    else if (r->want && r->value && json_object_set_nocheck(r->obj, r->key, r->value) != 0)
        r->nomem = 1;
    json_decref(r->value);
    r->value = NULL;
    r->entries++;
}

static int ident_char(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '.';
}

/* A string literal at p (quote ' or "), within the line: its text (an escaped character
 * taken as itself: memory_stats keys have none) into out[0..cap), NUL-terminated; *fit: 0
 * when it did not fit. Returns its end, or NULL when the line ends first. */
static const char *repr_string(const char *p, const char *end, char *out, size_t cap, int *fit)
{
    char q = *p++;
    size_t n = 0;
    *fit = 1;
    while (p < end && *p != q) {
        if (*p == '\\' && p + 1 < end)
            p++;
        if (n + 1 < cap)
            out[n++] = *p;
        else
            *fit = 0;
        p++;
    }
    if (p >= end)
        return NULL;
    out[n] = '\0';
    return p + 1;
}

/* A scalar value at p: an int, a float, None/True/False (JSON's null/true/false too), nan,
 * inf, a string. Sets r->value (NULL: no memory; null unless r->want and a number). Returns
 * its end, or NULL when none is there. */
static const char *repr_value(od_repr_reader *r, const char *p, const char *end)
{
    static const char *const words[] = {"None", "null", "nan", "inf", "-inf", "True", "true", "False", "false"};
    if (*p == '\'' || *p == '"') {
        char s[8];
        int fit;
        const char *e = repr_string(p, end, s, sizeof s, &fit);
        if (e)
            r->value = json_null(); /* no figure */
        return e;
    }
    const char *s = p;
    if (p + 1 < end && *p == '-' && isdigit((unsigned char)p[1]))
        p++;
    if (isdigit((unsigned char)*p)) {
        int real = 0;
        while (p < end && isdigit((unsigned char)*p))
            p++;
        if (p < end && *p == '.') {
            real = 1;
            for (p++; p < end && isdigit((unsigned char)*p);)
                p++;
        }
        if (p < end && (*p == 'e' || *p == 'E')) {
            real = 1;
            p++;
            if (p < end && (*p == '+' || *p == '-'))
                p++;
            if (p >= end || !isdigit((unsigned char)*p))
                return NULL;
            while (p < end && isdigit((unsigned char)*p))
                p++;
        }
        if (p < end && ident_char(*p))
            return NULL;
        char num[64];
        uint64_t u;
        const char *digits = s + (*s == '-');
        if (!r->want || (size_t)(p - s) >= sizeof num) {
            r->value = json_null(); /* not kept, or longer than any figure memory_stats holds */
        } else if (!real) {
            /* beyond int64 (a Python int has no limit): not read, rather than read wrong */
            if (parse_uint(digits, p, &u) == p && u <= (uint64_t)INT64_MAX)
                r->value = json_integer(*s == '-' ? -(json_int_t)u : (json_int_t)u);
            else
                r->value = json_null();
        } else {
            memcpy(num, s, (size_t)(p - s));
            num[p - s] = '\0';
            r->value = json_real(strtod(num, NULL));
            if (!r->value) /* json_real refuses what is not finite */
                r->value = json_null();
        }
        return p;
    }
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        size_t l = strlen(words[i]);
        if (starts(s, end, words[i]) && (s + l == end || !ident_char(s[l]))) {
            r->value = words[i][0] == 'T' || words[i][0] == 't' ? json_true()
                       : words[i][0] == 'F' || words[i][0] == 'f' ? json_false()
                                                                  : json_null();
            return s + l;
        }
    }
    return NULL;
}

/* An entry's key at p: a string. Returns its end, or NULL when none is there. */
static const char *repr_key(od_repr_reader *r, const char *p, const char *end)
{
    const char *e = NULL;
    if ((*p == '\'' || *p == '"') && (e = repr_string(p, end, r->key, sizeof r->key, &r->key_ok)) != NULL) {
        r->expect = R_SEP;
        r->want = r->key_ok && is_stats_key(r->key);
    }
    return e;
}

/* Where a literal may open in [p, end): "OrderedDict(", or '{' before a quoted key. Sets
 * what the reader expects next and returns the end of the opening; NULL: none. */
static const char *repr_open(od_repr_reader *r, const char *line, const char *p, const char *end)
{
    for (; p < end; p++) {
        const char *b = memchr(p, '{', (size_t)(end - p)), *od = find(p, b ? b : end, "OrderedDict(");
        if (!(p = od ? od : b))
            return NULL;
        const char *o = p, *e = NULL;
        if (p == od && (p == line || !ident_char(p[-1]))) {
            e = p + strlen("OrderedDict(");
            r->expect = R_INNER;
            r->wrapped = 1;
        } else if (*p == '{') {
            const char *k = skip_sp(p + 1, end);
            if (k < end && (*k == '\'' || *k == '"')) {
                e = p + 1;
                r->expect = R_ITEM;
                r->wrapped = 0;
                r->list = 0;
            }
        }
        if (!e)
            continue;
        /* the text before the literal, when it is more than indentation, may open its
         * continuation lines too */
        const char *pe = o;
        while (pe > line && (pe[-1] == ' ' || pe[-1] == '\t'))
            pe--;
        r->prefix_len = pe > line && (size_t)(pe - line) < sizeof r->prefix ? (size_t)(pe - line) : 0;
        memcpy(r->prefix, line, r->prefix_len);
        return e;
    }
    return NULL;
}

/* Read one line (normalized, without its '\n') into the literal being read, or look for
 * one. Every literal the line opens is read in turn. */
void od_repr_line(od_repr_reader *r, const char *line, size_t n)
{
    const char *p = line, *end = line + n;
    if (r->expect != R_IDLE && r->prefix_len && n >= r->prefix_len && memcmp(p, r->prefix, r->prefix_len) == 0)
        p += r->prefix_len;
    while (!r->nomem) {
        if (r->expect == R_IDLE && !(p = repr_open(r, line, p, end)))
            return;
        p = skip_sp(p, end);
        if (p >= end)
            return; /* the literal goes on on the next line */
        const char *next = NULL;
        char c = *p;
        switch (r->expect) {
        case R_INNER:
            if (c == '[' || c == '{') {
                r->list = c == '[';
                r->expect = R_ITEM;
                next = p + 1;
            } else if (c == ')') {
                repr_close(r, 1);
                next = p + 1;
            }
            break;
        case R_ITEM:
            if (r->list && c == '(') {
                r->expect = R_KEY;
                next = p + 1;
                break;
            }
            if (c == (r->list ? ']' : '}')) {
                r->expect = r->wrapped ? R_OUTER : R_IDLE;
                if (!r->wrapped)
                    repr_close(r, 1);
                next = p + 1;
            } else if (!r->list) {
                next = repr_key(r, p, end);
            }
            break;
        case R_KEY:
            next = repr_key(r, p, end);
            break;
        case R_SEP:
            if (c == (r->list ? ',' : ':')) {
                r->expect = R_VALUE;
                next = p + 1;
            }
            break;
        case R_VALUE:
            if ((next = repr_value(r, p, end)) != NULL)
                r->expect = r->list ? R_TUPLE_END : R_NEXT;
            if (next && !r->value)
                r->nomem = 1;
            break;
        case R_TUPLE_END:
            if (c == ')') {
                repr_commit(r);
                r->expect = R_NEXT;
                next = p + 1;
            }
            break;
        case R_NEXT:
            if (c == ',' || c == (r->list ? ']' : '}')) {
                if (!r->list)
                    repr_commit(r);
                next = p + 1;
                if (c != ',') {
                    r->expect = r->wrapped ? R_OUTER : R_IDLE;
                    if (!r->wrapped)
                        repr_close(r, 1);
                } else if (r->entries >= REPR_MAX_ENTRIES) {
                    repr_close(r, 0);
                } else {
                    r->expect = R_ITEM;
                }
            }
            break;
        case R_OUTER:
            if (c == ')') {
                repr_close(r, 1);
                next = p + 1;
            }
            break;
        }
        if (!next) {
            /* not Python: the literal was cut short here; this may open another */
            repr_close(r, 0);
            next = p;
        }
        p = next;
    }
}

/* The end of the input: a literal still open was cut short. */
void od_repr_end(od_repr_reader *r)
{
    if (r->expect != R_IDLE)
        repr_close(r, 0);
}

int od_repr_active(const od_repr_reader *r)
{
    return r->expect != R_IDLE;
}
