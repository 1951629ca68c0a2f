/* pickle_paths.h - for tests: read the same bytes twice, once opcode by opcode and once
 * with the reader's one-step paths for dicts and lists, and compare all that can be
 * observed: the status, the error's offset and message, every call of the absorb hook
 * with its pairs, and the whole tree; the second reading may get its input in small
 * chunks. The hook absorbs some dicts and refuses others, so
 * both of its outcomes and its error are compared too. */
#ifndef OD_TEST_PICKLE_PATHS_H
#define OD_TEST_PICKLE_PATHS_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "read/pickle.h"

#define PP_MAX_NODES 50000000u /* both runs stop printing at the same value */
#define PP_KEEP ((size_t)1 << 20) /* log bytes kept to show a difference; all are hashed */

typedef struct {
    char *buf;          /* the first PP_KEEP bytes */
    size_t len, cap;
    uint64_t total, hash; /* every byte */
    uint64_t nodes;       /* values printed: shared values print each time, so bounded */
    unsigned records;
} pp_log;

static void pp_printf(pp_log *l, const char *fmt, ...)
{
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    size_t k = (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1;
    if (!l->total)
        l->hash = 1469598103934665603ull;
    for (size_t i = 0; i < k; i++)
        l->hash = (l->hash ^ (unsigned char)tmp[i]) * 1099511628211ull;
    l->total += k;
    if (l->len + k + 1 > PP_KEEP)
        return;
    if (l->len + k + 1 > l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 4096;
        while (nc < l->len + k + 1)
            nc *= 2;
        char *nb = realloc(l->buf, nc);
        if (!nb)
            abort();
        l->buf = nb;
        l->cap = nc;
    }
    memcpy(l->buf + l->len, tmp, k);
    l->len += k;
    l->buf[l->len] = '\0';
}

static void pp_value(pp_log *l, const od_ptree *t, od_pv v, int depth)
{
    if (depth > 200 || ++l->nodes > PP_MAX_NODES) {
        pp_printf(l, "...");
        return;
    }
    od_pv_type ty = od_pv_typeof(t, v);
    int64_t i;
    uint64_t u;
    double d;
    int b;
    size_t n, len;
    switch (ty) {
    case OD_PV_MISSING: pp_printf(l, "?"); break;
    case OD_PV_NONE: pp_printf(l, "N"); break;
    case OD_PV_BOOL: (void)od_pv_get_bool(t, v, &b); pp_printf(l, b ? "T" : "F"); break;
    case OD_PV_INT:
        if (od_pv_get_i64(t, v, &i))
            pp_printf(l, "%lld", (long long)i);
        else if (od_pv_get_u64(t, v, &u))
            pp_printf(l, "%lluu", (unsigned long long)u);
        else if (od_pv_get_f64(t, v, &d))
            pp_printf(l, "%aL", d);
        break;
    case OD_PV_FLOAT: (void)od_pv_get_f64(t, v, &d); pp_printf(l, "%a", d); break;
    case OD_PV_STR:
    case OD_PV_BYTES: {
        const char *s = od_pv_str(t, v, &len);
        pp_printf(l, "%s%zu'", ty == OD_PV_STR ? "s" : "b", len);
        for (size_t k = 0; k < len && k < 64; k++)
            pp_printf(l, "%02x", (unsigned char)s[k]);
        break;
    }
    case OD_PV_LIST:
    case OD_PV_TUPLE:
    case OD_PV_SET:
        n = od_pv_len(t, v);
        pp_printf(l, ty == OD_PV_LIST ? "[" : ty == OD_PV_TUPLE ? "(" : "{");
        for (size_t k = 0; k < n; k++) {
            pp_value(l, t, od_pv_item(t, v, k), depth + 1);
            pp_printf(l, ",");
        }
        pp_printf(l, ty == OD_PV_LIST ? "]" : ty == OD_PV_TUPLE ? ")" : "}");
        break;
    case OD_PV_DICT:
        n = od_pv_len(t, v);
        pp_printf(l, "<");
        for (size_t k = 0; k < n; k++) {
            pp_value(l, t, od_pv_dict_key(t, v, k), depth + 1);
            pp_printf(l, ":");
            pp_value(l, t, od_pv_dict_value(t, v, k), depth + 1);
            pp_printf(l, ",");
        }
        pp_printf(l, ">");
        break;
    case OD_PV_RECORD: pp_printf(l, "R%u", od_pv_record(t, v)); break;
    }
}

/* Absorbs dicts with an odd number of pairs (numbered in call order), keeps the others,
 * and fails on a dict whose first value is the int 13. */
static int pp_hook(void *ud, const od_ptree *t, const od_pv *kv, size_t npairs, uint32_t *record,
                   od_error *err)
{
    pp_log *l = ud;
    pp_printf(l, "\nhook %zu:", npairs);
    for (size_t k = 0; k < 2 * npairs; k++) {
        pp_value(l, t, kv[k], 0);
        pp_printf(l, k % 2 ? "," : ":");
    }
    int64_t first;
    if (od_pv_get_i64(t, kv[1], &first) && first == 13) {
        od_fail(err, OD_ERR_FORMAT, "the test hook refuses %d", 13);
        return -1;
    }
    if (npairs % 2 == 0)
        return 0;
    *record = l->records++;
    return 1;
}

static void pp_run(const unsigned char *data, size_t size, int one_by_one, size_t chunk, pp_log *l)
{
    od_input *in;
    od_error err;
    if (od_input_open_memory(data, size, &in, &err) != OD_OK)
        abort();
    od_input_limit_chunks(in, chunk);
    od_pickle_options opt = {0};
    opt.absorb_dict = pp_hook;
    opt.ud = l;
    opt.max_string_bytes = 1 << 20;
    opt.opcode_by_opcode = one_by_one;
    od_ptree *t = NULL;
    od_status st = od_pickle_load(in, &opt, &t, &err);
    pp_printf(l, "\nstatus %d", (int)st);
    if (st != OD_OK) {
        pp_printf(l, " at %llu: ", (unsigned long long)err.offset);
        pp_printf(l, "%s", err.msg);
    } else {
        pp_printf(l, " read %llu\n", (unsigned long long)od_ptree_input_bytes(t));
        pp_value(l, t, od_ptree_root(t), 0);
    }
    od_ptree_free(t);
    od_input_close(in);
}

/* 0 when both ways agree; else 1, with the first difference printed to stderr. The
 * one-step reading gets its input in chunks of at most chunk bytes (0: as it comes), so
 * that opcodes straddle chunk boundaries too. */
static int pp_compare(const unsigned char *data, size_t size, size_t chunk)
{
    pp_log a = {0}, b = {0};
    pp_run(data, size, 1, 0, &a);
    pp_run(data, size, 0, chunk, &b);
    int differ = a.total != b.total || a.hash != b.hash || a.len != b.len ||
                 (a.len && memcmp(a.buf, b.buf, a.len) != 0);
    if (differ) {
        size_t k = 0;
        while (k < a.len && k < b.len && a.buf[k] == b.buf[k])
            k++;
        size_t from = k > 200 ? k - 200 : 0;
        fprintf(stderr, "opcode by opcode and one-step paths differ at log byte %zu:\n--- by opcode:\n%.400s\n"
                        "--- one-step:\n%.400s\n",
                k, a.buf ? a.buf + from : "", b.buf ? b.buf + from : "");
    }
    free(a.buf);
    free(b.buf);
    return differ;
}

#endif
