/* pprof.c - focused protobuf reader for pprof profiles (see pprof.h).
 *
 * Wire format: each field is a varint key (field number << 3 | wire type) followed by a
 * varint (type 0), 8 bytes (1), a length-delimited payload (2) or 4 bytes (5). Repeated
 * integers may be packed (type 2) or not (type 0); both are accepted, as the spec says. */
#include "read/pprof.h"

#include <stdlib.h>
#include <string.h>

#include "base/mem.h"

typedef struct {
    const uint8_t *p, *end;
    const uint8_t *start;     /* of the whole message, for offsets */
} cur;

static uint64_t off(const cur *c)
{
    return (uint64_t)(c->p - c->start);
}

static int varint(cur *c, uint64_t *v)
{
    uint64_t r = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (c->p >= c->end)
            return 0;
        uint8_t b = *c->p++;
        r |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) {
            *v = r;
            return 1;
        }
    }
    return 0;
}

/* Read a field key; 0 at end of message, -1 on error. */
static int key(cur *c, uint32_t *field, int *wire, od_error *err)
{
    if (c->p >= c->end)
        return 0;
    uint64_t k;
    uint64_t at = off(c);
    if (!varint(c, &k) || (k >> 3) == 0 || (k >> 3) > 0x1FFFFFFF) {
        od_fail_at(err, OD_ERR_FORMAT, at, "malformed protobuf field key (not a pprof profile?)");
        return -1;
    }
    *field = (uint32_t)(k >> 3);
    *wire = (int)(k & 7);
    return 1;
}

/* Take a length-delimited payload as a sub-cursor. */
static int sub(cur *c, cur *s, od_error *err)
{
    uint64_t at = off(c);
    uint64_t n;
    if (!varint(c, &n) || n > (uint64_t)(c->end - c->p)) {
        od_fail_at(err, OD_ERR_FORMAT, at, "protobuf length runs past the end (truncated file?)");
        return 0;
    }
    s->p = c->p;
    s->end = c->p + n;
    s->start = c->start;
    c->p += n;
    return 1;
}

static int skip(cur *c, int wire, od_error *err)
{
    uint64_t at = off(c), v;
    cur s;
    switch (wire) {
    case 0:
        if (varint(c, &v))
            return 1;
        break;
    case 1:
        if (c->end - c->p >= 8) {
            c->p += 8;
            return 1;
        }
        break;
    case 2:
        return sub(c, &s, err);
    case 5:
        if (c->end - c->p >= 4) {
            c->p += 4;
            return 1;
        }
        break;
    default:
        od_fail_at(err, OD_ERR_FORMAT, at, "unsupported protobuf wire type %d", wire);
        return 0;
    }
    od_fail_at(err, OD_ERR_FORMAT, at, "protobuf field runs past the end (truncated file?)");
    return 0;
}

static int uint_field(cur *c, int wire, uint64_t *v, od_error *err)
{
    uint64_t at = off(c);
    if (wire != 0) {
        od_fail_at(err, OD_ERR_FORMAT, at, "expected a varint field in the pprof profile");
        return 0;
    }
    if (!varint(c, v)) {
        od_fail_at(err, OD_ERR_FORMAT, at, "truncated varint");
        return 0;
    }
    return 1;
}

/* A new zeroed element at the end of *arr (count *n, capacity *cap); NULL when out of
 * memory. */
static void *append_zeroed(void **arr, size_t *cap, size_t *n, size_t elem)
{
    if (!od_grow(arr, cap, *n + 1, elem))
        return NULL;
    void *e = (char *)*arr + (*n)++ * elem;
    memset(e, 0, elem);
    return e;
}

/* Repeated integers, packed or not, appended to *arr. */
static int ints(cur *c, int wire, uint64_t **arr, size_t *n, size_t *cap, od_error *err)
{
    if (wire == 0) {
        uint64_t v;
        if (!uint_field(c, wire, &v, err))
            return 0;
        if (!od_grow((void **)arr, cap, *n + 1, sizeof **arr))
            return od_fail(err, OD_ERR_NOMEM, "out of memory"), 0;
        (*arr)[(*n)++] = v;
        return 1;
    }
    if (wire != 2) {
        od_fail_at(err, OD_ERR_FORMAT, off(c), "expected repeated integers in the pprof profile");
        return 0;
    }
    cur s;
    if (!sub(c, &s, err))
        return 0;
    while (s.p < s.end) {
        uint64_t v;
        uint64_t at = off(&s);
        if (!varint(&s, &v)) {
            od_fail_at(err, OD_ERR_FORMAT, at, "truncated packed varint");
            return 0;
        }
        if (!od_grow((void **)arr, cap, *n + 1, sizeof **arr))
            return od_fail(err, OD_ERR_NOMEM, "out of memory"), 0;
        (*arr)[(*n)++] = v;
    }
    return 1;
}

#define NOMEM() (od_fail(err, OD_ERR_NOMEM, "out of memory"), 0)

static int parse_value_type(cur *c, od_pprof_value_type *vt, od_error *err)
{
    uint32_t f;
    int w, r;
    while ((r = key(c, &f, &w, err)) > 0) {
        uint64_t v;
        if (f == 1 || f == 2) {
            if (!uint_field(c, w, &v, err))
                return 0;
            if (f == 1)
                vt->type = (int64_t)v;
            else
                vt->unit = (int64_t)v;
        } else if (!skip(c, w, err)) {
            return 0;
        }
    }
    return r == 0;
}

static int parse_sample(cur *c, od_pprof_sample *s, od_error *err)
{
    uint32_t f;
    int w, r;
    size_t cap_loc = 0, cap_val = 0, cap_lab = 0;
    while ((r = key(c, &f, &w, err)) > 0) {
        if (f == 1) {
            if (!ints(c, w, &s->location_ids, &s->n_locations, &cap_loc, err))
                return 0;
        } else if (f == 2) {
            if (!ints(c, w, (uint64_t **)&s->values, &s->n_values, &cap_val, err))
                return 0;
        } else if (f == 3) {
            cur l;
            if (w != 2) {
                od_fail_at(err, OD_ERR_FORMAT, off(c), "expected a label message");
                return 0;
            }
            if (!sub(c, &l, err))
                return 0;
            if (!od_grow((void **)&s->labels, &cap_lab, s->n_labels + 1, sizeof *s->labels))
                return NOMEM();
            od_pprof_label *lab = &s->labels[s->n_labels++];
            memset(lab, 0, sizeof *lab);
            uint32_t lf;
            int lw, lr;
            while ((lr = key(&l, &lf, &lw, err)) > 0) {
                uint64_t v;
                if (lf >= 1 && lf <= 3) {
                    if (!uint_field(&l, lw, &v, err))
                        return 0;
                    if (lf == 1) lab->key = (int64_t)v;
                    else if (lf == 2) lab->str = (int64_t)v;
                    else lab->num = (int64_t)v;
                } else if (!skip(&l, lw, err)) {
                    return 0;
                }
            }
            if (lr < 0)
                return 0;
        } else if (!skip(c, w, err)) {
            return 0;
        }
    }
    return r == 0;
}

static int parse_location(cur *c, od_pprof_location *loc, od_error *err)
{
    uint32_t f;
    int w, r;
    size_t cap = 0;
    while ((r = key(c, &f, &w, err)) > 0) {
        if (f == 1) {
            if (!uint_field(c, w, &loc->id, err))
                return 0;
        } else if (f == 4) {
            cur l;
            if (w != 2) {
                od_fail_at(err, OD_ERR_FORMAT, off(c), "expected a line message");
                return 0;
            }
            if (!sub(c, &l, err))
                return 0;
            if (!od_grow((void **)&loc->lines, &cap, loc->n_lines + 1, sizeof *loc->lines))
                return NOMEM();
            od_pprof_line *ln = &loc->lines[loc->n_lines++];
            memset(ln, 0, sizeof *ln);
            uint32_t lf;
            int lw, lr;
            while ((lr = key(&l, &lf, &lw, err)) > 0) {
                uint64_t v;
                if (lf == 1 || lf == 2) {
                    if (!uint_field(&l, lw, &v, err))
                        return 0;
                    if (lf == 1) ln->function_id = v;
                    else ln->line = (int64_t)v;
                } else if (!skip(&l, lw, err)) {
                    return 0;
                }
            }
            if (lr < 0)
                return 0;
        } else if (!skip(c, w, err)) {
            return 0;
        }
    }
    return r == 0;
}

static int parse_function(cur *c, od_pprof_function *fn, od_error *err)
{
    uint32_t f;
    int w, r;
    while ((r = key(c, &f, &w, err)) > 0) {
        uint64_t v;
        if (f == 1 || f == 2 || f == 4 || f == 5) {
            if (!uint_field(c, w, &v, err))
                return 0;
            if (f == 1) fn->id = v;
            else if (f == 2) fn->name = (int64_t)v;
            else if (f == 4) fn->filename = (int64_t)v;
            else fn->start_line = (int64_t)v;
        } else if (!skip(c, w, err)) {
            return 0;
        }
    }
    return r == 0;
}

static int cmp_loc(const void *a, const void *b)
{
    uint64_t x = ((const od_pprof_location *)a)->id, y = ((const od_pprof_location *)b)->id;
    return x < y ? -1 : x > y;
}

static int cmp_fn(const void *a, const void *b)
{
    uint64_t x = ((const od_pprof_function *)a)->id, y = ((const od_pprof_function *)b)->id;
    return x < y ? -1 : x > y;
}

od_status od_pprof_parse(const void *data, size_t len, od_pprof **out, od_error *err)
{
    *out = NULL;
    od_pprof *p = calloc(1, sizeof *p);
    if (!p)
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    p->data = malloc(len ? len : 1);
    if (!p->data) {
        free(p);
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    }
    if (len)
        memcpy(p->data, data, len);
    cur c = {(const uint8_t *)p->data, (const uint8_t *)p->data + len, (const uint8_t *)p->data};
    size_t cap_st = 0, cap_s = 0, cap_l = 0, cap_f = 0, cap_str = 0;
    size_t strings_bytes = 0;
    struct span { const uint8_t *p; size_t n; } *spans = NULL;
    uint32_t f;
    int w, r;
    od_status st = OD_OK;
    while ((r = key(&c, &f, &w, err)) > 0) {
        cur s;
        if (f >= 1 && f <= 6 && f != 3) {
            if (w != 2) {
                st = od_fail_at(err, OD_ERR_FORMAT, off(&c), "expected a length-delimited field %u in the pprof profile", f);
                goto fail;
            }
            if (!sub(&c, &s, err))
                goto fail_err;
        } else {
            if (!skip(&c, w, err))
                goto fail_err;
            continue;
        }
        switch (f) {
/* A new zeroed element at the end of p->arr_, filled by parse_; goes to nomem when the
 * array cannot grow, to fail_err when parse_ fails. */
#define APPEND_PARSED_OR_GOTO_FAIL(arr_, cap_, parse_)                                      \
    do {                                                                                    \
        void *e = append_zeroed((void **)&p->arr_, &(cap_), &p->n_##arr_, sizeof *p->arr_); \
        if (!e)                                                                             \
            goto nomem;                                                                     \
        if (!parse_(&s, e, err))                                                            \
            goto fail_err;                                                                  \
    } while (0)
        case 1:
            APPEND_PARSED_OR_GOTO_FAIL(sample_types, cap_st, parse_value_type);
            break;
        case 2:
            APPEND_PARSED_OR_GOTO_FAIL(samples, cap_s, parse_sample);
            break;
        case 4:
            APPEND_PARSED_OR_GOTO_FAIL(locations, cap_l, parse_location);
            break;
        case 5:
            APPEND_PARSED_OR_GOTO_FAIL(functions, cap_f, parse_function);
            break;
#undef APPEND_PARSED_OR_GOTO_FAIL
        case 6:
            if (!od_grow((void **)&spans, &cap_str, p->n_strings + 1, sizeof *spans))
                goto nomem;
            spans[p->n_strings].p = s.p;
            spans[p->n_strings].n = (size_t)(s.end - s.p);
            p->n_strings++;
            strings_bytes += (size_t)(s.end - s.p) + 1;
            break;
        }
    }
    if (r < 0)
        goto fail_err;
    /* pprof requires string_table[0] == "": a cheap check that this is a profile. */
    if (p->n_strings == 0 || spans[0].n != 0) {
        st = od_fail_at(err, OD_ERR_FORMAT, 0, "not a pprof profile (its string table must start with \"\")");
        goto fail;
    }
    p->strings = malloc(p->n_strings * sizeof *p->strings);
    p->strings_buf = malloc(strings_bytes);
    if (!p->strings || !p->strings_buf)
        goto nomem;
    {
        char *q = p->strings_buf;
        for (size_t i = 0; i < p->n_strings; i++) {
            memcpy(q, spans[i].p, spans[i].n);
            q[spans[i].n] = 0;
            /* an embedded NUL would cut the name short: harmless */
            p->strings[i] = q;
            q += spans[i].n + 1;
        }
    }
    free(spans);
    od_sort(p->locations, p->n_locations, sizeof *p->locations, cmp_loc);
    od_sort(p->functions, p->n_functions, sizeof *p->functions, cmp_fn);
    *out = p;
    return OD_OK;
nomem:
    st = od_fail(err, OD_ERR_NOMEM, "out of memory");
    goto fail;
fail_err:
    st = err ? err->status : OD_ERR_FORMAT;
    if (st == OD_OK)
        st = OD_ERR_FORMAT;
fail:
    free(spans);
    od_pprof_free(p);
    return st;
}

void od_pprof_free(od_pprof *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->n_samples; i++) {
        free(p->samples[i].location_ids);
        free(p->samples[i].values);
        free(p->samples[i].labels);
    }
    for (size_t i = 0; i < p->n_locations; i++)
        free(p->locations[i].lines);
    free(p->samples);
    free(p->locations);
    free(p->functions);
    free(p->sample_types);
    free(p->strings);
    free(p->strings_buf);
    free(p->data);
    free(p);
}

const char *od_pprof_string(const od_pprof *p, int64_t i)
{
    if (i < 0 || (uint64_t)i >= p->n_strings)
        return "";
    return p->strings[i];
}

const od_pprof_location *od_pprof_location_by_id(const od_pprof *p, uint64_t id)
{
    od_pprof_location k = {.id = id};
    if (!p->n_locations)
        return NULL;
    return bsearch(&k, p->locations, p->n_locations, sizeof k, cmp_loc);
}

const od_pprof_function *od_pprof_function_by_id(const od_pprof *p, uint64_t id)
{
    od_pprof_function k = {.id = id};
    if (!p->n_functions)
        return NULL;
    return bsearch(&k, p->functions, p->n_functions, sizeof k, cmp_fn);
}
