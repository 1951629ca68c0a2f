/* test_pickle.c - the pickle reader against bytes written by Python's own pickle module,
 * hostile inputs, and the real snapshot fixtures. Run from the repository root. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oomdoc/snapshot.h"
#include "read/pickle.h"

#include "pickle_paths.h"
#include "pickle_samples.h"

static od_status parse(const void *data, size_t len, od_ptree **t, od_error *err)
{
    od_input *in;
    assert_int_equal(od_input_open_memory(data, len, &in, err), OD_OK);
    od_status st = od_pickle_load(in, NULL, t, err);
    od_input_close(in);
    return st;
}

static int64_t geti(const od_ptree *t, od_pv v)
{
    int64_t i = 0;
    assert_true(od_pv_get_i64(t, v, &i));
    return i;
}

static void check_plain(const od_ptree *t, int full)
{
    od_pv root = od_ptree_root(t);
    assert_int_equal(od_pv_typeof(t, root), OD_PV_DICT);
    od_pv a = od_pv_dict_gets(t, root, "a");
    assert_int_equal(od_pv_typeof(t, a), OD_PV_LIST);
    assert_int_equal(od_pv_len(t, a), 12);
    assert_int_equal(geti(t, od_pv_item(t, a, 0)), 1);
    assert_int_equal(geti(t, od_pv_item(t, a, 1)), -2);
    assert_true(geti(t, od_pv_item(t, a, 2)) == ((int64_t)1 << 40));
    /* -(2**70) does not fit 64 bits: an int, readable as a float only */
    double d;
    int64_t i;
    assert_int_equal(od_pv_typeof(t, od_pv_item(t, a, 3)), OD_PV_INT);
    assert_false(od_pv_get_i64(t, od_pv_item(t, a, 3), &i));
    assert_true(od_pv_get_f64(t, od_pv_item(t, a, 3), &d));
    assert_true(d == -1180591620717411303424.0);
    uint64_t u;
    assert_true(od_pv_get_u64(t, od_pv_item(t, a, 4), &u));
    assert_true(u == UINT64_MAX);
    assert_true(od_pv_get_f64(t, od_pv_item(t, a, 5), &d));
    assert_true(d == 1.5);
    assert_int_equal(od_pv_typeof(t, od_pv_item(t, a, 6)), OD_PV_BOOL);
    assert_int_equal(od_pv_typeof(t, od_pv_item(t, a, 7)), OD_PV_NONE);
    assert_string_equal(od_pv_str(t, od_pv_item(t, a, 8), NULL), "h\xc3\xa9llo");
    od_pv tup = od_pv_item(t, a, 9);
    assert_int_equal(od_pv_typeof(t, tup), OD_PV_TUPLE);
    assert_int_equal(geti(t, od_pv_item(t, tup, 1)), 2);
    assert_int_equal(od_pv_len(t, od_pv_item(t, a, 10)), 0);
    od_pv dd = od_pv_item(t, a, 11);
    assert_int_equal(od_pv_typeof(t, dd), OD_PV_DICT);
    assert_string_equal(od_pv_str(t, od_pv_dict_value(t, dd, 0), NULL), "x");
    assert_int_equal(geti(t, od_pv_dict_key(t, dd, 0)), 7);
    size_t len;
    const char *big = od_pv_str(t, od_pv_dict_gets(t, root, "big"), &len);
    assert_int_equal(len, 300);
    assert_int_equal(big[299], 'x');
    if (full) {
        od_pv b = od_pv_dict_gets(t, root, "b");
        assert_int_equal(od_pv_typeof(t, b), OD_PV_BYTES);
        assert_memory_equal(od_pv_str(t, b, &len), "\x00\xff", 2);
        od_pv s = od_pv_dict_gets(t, root, "s");
        assert_int_equal(od_pv_typeof(t, s), OD_PV_SET);
        assert_int_equal(geti(t, od_pv_item(t, s, 0)), 3);
    }
}

static void reads_protocols_2_to_5(void **state)
{
    (void)state;
    struct { const unsigned char *data; size_t len; int full; } cases[] = {
        {plain_p2, sizeof plain_p2, 0}, {plain_p3, sizeof plain_p3, 0},
        {full_p4, sizeof full_p4, 1}, {full_p5, sizeof full_p5, 1},
    };
    for (size_t i = 0; i < 4; i++) {
        od_ptree *t;
        od_error err;
        assert_int_equal(parse(cases[i].data, cases[i].len, &t, &err), OD_OK);
        check_plain(t, cases[i].full);
        assert_int_equal(od_ptree_input_bytes(t), cases[i].len);
        od_ptree_free(t);
    }
}

static void refuses_global_with_offset(void **state)
{
    (void)state;
    od_ptree *t;
    od_error err;
    assert_int_equal(parse(bytes_p2, sizeof bytes_p2, &t, &err), OD_ERR_REFUSED);
    assert_null(t);
    assert_true(err.has_offset);
    assert_int_equal(err.offset, BYTES_P2_GLOBAL_OFFSET);
    assert_non_null(strstr(err.msg, "GLOBAL"));
}

static void refuses_every_code_opcode(void **state)
{
    (void)state;
    /* PROTO 4, then the opcode under test at byte 2. */
    const unsigned char ops[] = {'c', 0x93, 'R', 'b', 'i', 'o', 0x81, 0x92, 'P', 'Q', 0x82, 0x97};
    for (size_t i = 0; i < sizeof ops; i++) {
        unsigned char buf[] = {0x80, 4, ops[i], 0, 0, 0, 0, 0, 0, 0, '.'};
        od_ptree *t;
        od_error err;
        assert_int_equal(parse(buf, sizeof buf, &t, &err), OD_ERR_REFUSED);
        assert_int_equal(err.offset, 2);
        assert_non_null(strstr(err.msg, "refused"));
    }
    unsigned char unknown[] = {0x80, 4, 0xff, '.'};
    od_ptree *t;
    od_error err;
    assert_int_equal(parse(unknown, sizeof unknown, &t, &err), OD_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "0xff"));
}

static void every_truncation_fails_cleanly(void **state)
{
    (void)state;
    for (size_t n = 0; n < sizeof full_p4; n++) {
        od_ptree *t;
        od_error err;
        od_status st = parse(full_p4, n, &t, &err);
        assert_int_not_equal(st, OD_OK);
        assert_null(t);
        assert_true(err.has_offset);
        assert_true(err.offset <= n);
    }
}

static void absurd_lengths_cost_nothing(void **state)
{
    (void)state;
    od_ptree *t;
    od_error err;
    /* BINUNICODE8 claiming 2^40 bytes: over the limit */
    unsigned char huge[] = {0x80, 4, 0x8d, 0, 0, 0, 0, 0, 1, 0, 0, 'x', '.'};
    assert_int_equal(parse(huge, sizeof huge, &t, &err), OD_ERR_LIMIT);
    assert_int_equal(err.offset, 2);
    /* BINUNICODE claiming 100 MB with 3 bytes present: truncated where the input ends */
    unsigned char trunc[] = {0x80, 4, 'X', 0x00, 0xe1, 0xf5, 0x05, 'a', 'b', 'c'};
    assert_int_equal(parse(trunc, sizeof trunc, &t, &err), OD_ERR_FORMAT);
    assert_int_equal(err.offset, sizeof trunc);
    assert_non_null(strstr(err.msg, "truncated"));
    /* memo index far beyond the memo */
    unsigned char memo[] = {0x80, 4, 'N', 'r', 0xff, 0xff, 0xff, 0xff, '.'};
    assert_int_equal(parse(memo, sizeof memo, &t, &err), OD_ERR_LIMIT);
    assert_int_equal(err.offset, 3);
    /* memo lookup of nothing */
    unsigned char get[] = {0x80, 4, 'h', 5, '.'};
    assert_int_equal(parse(get, sizeof get, &t, &err), OD_ERR_FORMAT);
    /* STOP with an empty stack, APPENDS without MARK, odd SETITEMS */
    unsigned char empty[] = {0x80, 4, '.'};
    assert_int_equal(parse(empty, sizeof empty, &t, &err), OD_ERR_FORMAT);
    unsigned char nomark[] = {0x80, 4, ']', 'K', 1, 'e', '.'};
    assert_int_equal(parse(nomark, sizeof nomark, &t, &err), OD_ERR_FORMAT);
    assert_int_equal(err.offset, 5);
    unsigned char odd[] = {0x80, 4, '}', '(', 'K', 1, 'u', '.'};
    assert_int_equal(parse(odd, sizeof odd, &t, &err), OD_ERR_FORMAT);
}

static void shares_equal_lists(void **state)
{
    (void)state;
    od_ptree *t;
    od_error err;
    assert_int_equal(parse(shared_lists, sizeof shared_lists, &t, &err), OD_OK);
    od_pv root = od_ptree_root(t);
    assert_int_equal(od_pv_len(t, root), 3);
    uint32_t a = od_pv_identity(t, od_pv_item(t, root, 0));
    uint32_t b = od_pv_identity(t, od_pv_item(t, root, 1));
    uint32_t c = od_pv_identity(t, od_pv_item(t, root, 2));
    assert_int_equal(a, b);
    assert_int_not_equal(a, c);
    assert_string_equal(od_pv_str(t, od_pv_item(t, od_pv_item(t, root, 2), 1), NULL), "h");
    od_ptree_free(t);
}

/* Two dicts whose frames lists have the same bytes, with memo slot 0 overwritten (PUT)
 * between them: pickle.loads gives [{'f': ['a','b']*5}, {'f': ['z','b']*5}]. The second
 * list must not come from the cache of lists by their bytes. */
static const unsigned char memo_overwritten[] = {
    0x80, 0x04, 0x8c, 0x01, 0x61, 0x94, 0x30, 0x8c, 0x01, 0x62, 0x94, 0x30, 0x8c, 0x01, 0x66, 0x94,
    0x30, 0x5d, 0x94, 0x28, 0x7d, 0x94, 0x28, 0x68, 0x02, 0x5d, 0x94, 0x28, 0x68, 0x00, 0x68, 0x01,
    0x68, 0x00, 0x68, 0x01, 0x68, 0x00, 0x68, 0x01, 0x68, 0x00, 0x68, 0x01, 0x68, 0x00, 0x68, 0x01,
    0x65, 0x75, 0x8c, 0x01, 0x7a, 0x71, 0x00, 0x30, 0x7d, 0x94, 0x28, 0x68, 0x02, 0x5d, 0x94, 0x28,
    0x68, 0x00, 0x68, 0x01, 0x68, 0x00, 0x68, 0x01, 0x68, 0x00, 0x68, 0x01, 0x68, 0x00, 0x68, 0x01,
    0x68, 0x00, 0x68, 0x01, 0x65, 0x75, 0x65, 0x2e,
};

static void repeated_bytes_after_a_memo_overwrite(void **state)
{
    (void)state;
    od_ptree *t;
    od_error err;
    assert_int_equal(parse(memo_overwritten, sizeof memo_overwritten, &t, &err), OD_OK);
    od_pv root = od_ptree_root(t);
    assert_int_equal(od_pv_len(t, root), 2);
    for (size_t d = 0; d < 2; d++) {
        od_pv f = od_pv_dict_gets(t, od_pv_item(t, root, d), "f");
        assert_int_equal(od_pv_len(t, f), 10);
        for (size_t i = 0; i < 10; i++)
            assert_string_equal(od_pv_str(t, od_pv_item(t, f, i), NULL), i % 2 ? "b" : d ? "z" : "a");
    }
    od_ptree_free(t);
    assert_int_equal(pp_compare(memo_overwritten, sizeof memo_overwritten, 0), 0);
    assert_int_equal(pp_compare(memo_overwritten, sizeof memo_overwritten, 1), 0);
}

/* Memo slots hold values of 4 bytes; wider ones (negative ints and ints past 2^29, which
 * pickle.dump never memoizes but another writer may) keep theirs in a side table: each fetch gives the
 * value stored, PUT over a wide slot included. */
static void wide_memo_values(void **state)
{
    (void)state;
    static const unsigned char p[] = {
        0x80, 0x04,                                     /* PROTO 4 */
        '(',                                            /* MARK */
        0x8a, 0x08, 0, 0, 0, 0, 0, 0x01, 0, 0,          /* LONG1 2^40 */
        0x94,                                           /* MEMOIZE -> 0 (wide) */
        'J', 7, 0, 0, 0,                                /* BININT 7 */
        0x94,                                           /* MEMOIZE -> 1 */
        'h', 0,                                         /* BINGET 0 */
        'h', 1,                                         /* BINGET 1 */
        'J', 0xfb, 0xff, 0xff, 0xff,                    /* BININT -5 */
        'q', 1,                                         /* BINPUT 1: wide over narrow */
        'h', 1,                                         /* BINGET 1 */
        'J', 9, 0, 0, 0,                                /* BININT 9 */
        'q', 0,                                         /* BINPUT 0: narrow over wide */
        'h', 0,                                         /* BINGET 0 */
        'l',                                            /* LIST */
        '.'};
    od_ptree *t;
    od_error err;
    assert_int_equal(parse(p, sizeof p, &t, &err), OD_OK);
    od_pv root = od_ptree_root(t);
    assert_int_equal(od_pv_len(t, root), 8);
    /* pickle.loads of these bytes */
    const int64_t want[8] = {INT64_C(1099511627776), 7, INT64_C(1099511627776), 7, -5, -5, 9, 9};
    for (size_t i = 0; i < 8; i++)
        assert_true(geti(t, od_pv_item(t, root, i)) == want[i]);
    od_ptree_free(t);
}

static int absorb_all(void *ud, const od_ptree *t, const od_pv *kv, size_t npairs, uint32_t *record,
                      od_error *err)
{
    (void)t, (void)kv, (void)npairs, (void)err;
    *record = (*(uint32_t *)ud)++;
    return 1;
}

/* A list of absorbed dicts in their own order is kept as a run (first record, count), and
 * is written out whole when anything else joins it or its items are asked for. */
static void record_runs(void **state)
{
    (void)state;
    /* pickle.dumps([{'a': 1}, {'a': 2}, {'a': 3}], protocol=4) without its FRAME, then
     * optionally BININT1 5 APPEND */
    static const unsigned char p[] = {0x80, 0x04, 0x5d, 0x94, 0x28, 0x7d, 0x94, 0x8c, 0x01, 0x61, 0x94, 0x4b, 0x01,
                                      0x73, 0x7d, 0x94, 0x68, 0x02, 0x4b, 0x02, 0x73, 0x7d, 0x94, 0x68, 0x02, 0x4b,
                                      0x03, 0x73, 0x65, 0x4b, 0x05, 0x61, 0x2e};
    for (int more = 0; more < 2; more++) {
        unsigned char b[sizeof p];
        size_t n = sizeof p;
        memcpy(b, p, n);
        if (!more) {
            b[n - 4] = 0x2e; /* STOP after APPENDS */
            n -= 3;
        }
        uint32_t next = 7;
        od_pickle_options o = {.absorb_dict = absorb_all, .ud = &next};
        od_input *in;
        od_ptree *t;
        od_error err;
        assert_int_equal(od_input_open_memory(b, n, &in, &err), OD_OK);
        assert_int_equal(od_pickle_load(in, &o, &t, &err), OD_OK);
        od_input_close(in);
        od_pv root = od_ptree_root(t);
        uint32_t first = 0;
        size_t count = 0;
        assert_int_equal(od_pv_record_run(t, root, &first, &count), !more);
        if (!more) {
            assert_int_equal(first, 7);
            assert_int_equal(count, 3);
        }
        assert_int_equal(od_pv_len(t, root), 3 + more);
        for (size_t i = 0; i < 3; i++)
            assert_int_equal(od_pv_record(t, od_pv_item(t, root, i)), 7 + i);
        size_t m;
        const od_pv *items = od_pv_items(t, root, &m);
        assert_non_null(items);
        assert_int_equal(m, 3 + more);
        for (size_t i = 0; i < 3; i++)
            assert_int_equal(od_pv_record(t, items[i]), 7 + i);
        if (more)
            assert_int_equal(geti(t, items[3]), 5);
        assert_int_equal(od_pv_record_run(t, root, &first, &count), 0); /* written out now */
        od_ptree_free(t);
    }
}

static void grows_long_lists(void **state)
{
    (void)state;
    od_ptree *t;
    od_error err;
    assert_int_equal(parse(long_list, sizeof long_list, &t, &err), OD_OK);
    od_pv root = od_ptree_root(t);
    assert_int_equal(od_pv_len(t, root), 2500);
    for (size_t i = 0; i < 2500; i++)
        assert_int_equal(geti(t, od_pv_item(t, root, i)), (int64_t)i);
    od_ptree_free(t);
}

static void refuses_modifying_a_placed_list(void **state)
{
    (void)state;
    /* l = []; outer = [l]; then l gets appended to through the memo */
    unsigned char buf[] = {0x80, 4, ']', 0x94, ']', 'h', 0, 'a', 'h', 0, 'K', 1, 'a', '.'};
    od_ptree *t;
    od_error err;
    assert_int_equal(parse(buf, sizeof buf, &t, &err), OD_ERR_FORMAT);
    assert_int_equal(err.offset, 12);
}

/* ']' * d then 'a' * (d - 1) then STOP: lists nested d deep, the innermost appended
 * first. */
static unsigned char *nested_lists(size_t d, size_t *len)
{
    unsigned char *buf = malloc(d * 2 + 8);
    size_t n = 0;
    buf[n++] = 0x80;
    buf[n++] = 4;
    for (size_t i = 0; i < d; i++)
        buf[n++] = ']';
    for (size_t i = 0; i + 1 < d; i++)
        buf[n++] = 'a';
    buf[n++] = '.';
    *len = n;
    return buf;
}

/* Containers nest at most 1000 deep (a snapshot nests 7): the placement that would make
 * one deeper fails there, so 50 MB of TUPLE1 cannot build fifty million distinct tuples
 * (1.9 GB, a minute, before the bound). Nothing recurses on the way. */
static void nesting_is_bounded(void **state)
{
    (void)state;
    size_t n;
    od_ptree *t = NULL;
    od_error err;
    unsigned char *buf = nested_lists(1000, &n);
    assert_int_equal(parse(buf, n, &t, &err), OD_OK);
    assert_int_equal(od_pv_typeof(t, od_ptree_root(t)), OD_PV_LIST);
    od_ptree_free(t);
    free(buf);
    buf = nested_lists(1001, &n); /* the root is placed at STOP */
    t = NULL;
    assert_int_equal(parse(buf, n, &t, &err), OD_ERR_LIMIT);
    assert_null(t);
    assert_int_equal(err.offset, n - 1);
    free(buf);
    buf = nested_lists(200000, &n); /* APPEND number k places a list k deep */
    assert_int_equal(parse(buf, n, &t, &err), OD_ERR_LIMIT);
    assert_int_equal(err.offset, 2 + 200000 + 1000);
    assert_non_null(strstr(err.msg, "nested more than 1000 deep"));
    free(buf);
    /* None, then TUPLE1 after TUPLE1: number k places a tuple k - 1 deep */
    n = 2 + 1 + 100000 + 1;
    buf = malloc(n);
    buf[0] = 0x80;
    buf[1] = 4;
    buf[2] = 'N';
    memset(buf + 3, 0x85, 100000);
    buf[n - 1] = '.';
    assert_int_equal(parse(buf, n, &t, &err), OD_ERR_LIMIT);
    assert_int_equal(err.offset, 3 + 1001);
    free(buf);
}

/* The stack and the MARKs hold at most 4 Mi entries (2^22): a file of nothing but MARKs,
 * DUPs, empty lists or small dicts fails at the first one past that, at its offset, instead of taking
 * gigabytes (2e8 MARKs gzip to 194 KB). */
static void stack_is_bounded(void **state)
{
    (void)state;
    const size_t limit = (size_t)1 << 22;
    const unsigned char ops[] = {'(', ']', 0x4e /* None, then DUPs */};
    for (size_t k = 0; k < sizeof ops; k++) {
        size_t n = limit + 16;
        unsigned char *buf = malloc(n + 4);
        buf[0] = 0x80;
        buf[1] = 4;
        memset(buf + 2, k == 2 ? '2' : ops[k], n);
        if (k == 2)
            buf[2] = 'N';
        buf[n + 2] = '.';
        od_ptree *t = NULL;
        od_error err;
        assert_int_equal(parse(buf, n + 3, &t, &err), OD_ERR_LIMIT);
        assert_null(t);
        assert_true(err.has_offset);
        assert_int_equal(err.offset, 2 + limit);
        assert_non_null(strstr(err.msg, "on the pickle's stack"));
        free(buf);
    }
    /* dicts the one-step path takes ({1: 2}, 8 bytes each) count too: the stack is full
     * at the second value of dict 2^22 - 2, five bytes into it */
    static const unsigned char d[8] = {'}', 0x94, '(', 'K', 1, 'K', 2, 'u'};
    size_t n = 2 + 8 * (limit + 2) + 1;
    unsigned char *buf = malloc(n);
    buf[0] = 0x80;
    buf[1] = 4;
    for (size_t i = 0; i < limit + 2; i++)
        memcpy(buf + 2 + 8 * i, d, 8);
    buf[n - 1] = '.';
    od_ptree *t = NULL;
    od_error err;
    assert_int_equal(parse(buf, n, &t, &err), OD_ERR_LIMIT);
    assert_int_equal(err.offset, 2 + 8 * (limit - 2) + 5);
    free(buf);
}

/* A container popped off the stack that nothing else holds is freed at once: after a
 * million empty lists pushed and popped (POP, and POP_MARK for the last thousand), the list
 * left is in the first container's slot, not the million-and-first. One memoized first,
 * or DUPed, is kept. */
static void popped_containers_are_freed(void **state)
{
    (void)state;
    size_t pairs = 1000000;
    unsigned char *buf = malloc(2 * pairs + 2016);
    size_t n = 0;
    buf[n++] = 0x80;
    buf[n++] = 4;
    for (size_t i = 0; i < pairs; i++) {
        buf[n++] = ']';
        buf[n++] = '0';
    }
    buf[n++] = '(';
    for (size_t i = 0; i < 1000; i++)
        buf[n++] = '}';
    buf[n++] = '1';
    buf[n++] = ']';
    buf[n++] = '.';
    od_ptree *t;
    od_error err;
    assert_int_equal(parse(buf, n, &t, &err), OD_OK);
    assert_int_equal(od_pv_typeof(t, od_ptree_root(t)), OD_PV_LIST);
    assert_true(od_pv_identity(t, od_ptree_root(t)) < 2);
    od_ptree_free(t);
    /* memoized ("]\x94" then a pop) and DUPed ones stay */
    static const unsigned char kept[] = {0x80, 4, ']', 0x94, '0', ']', '2', '0', '0', ']', '.'};
    assert_int_equal(parse(kept, sizeof kept, &t, &err), OD_OK);
    assert_int_equal(od_pv_identity(t, od_ptree_root(t)), 2);
    od_ptree_free(t);
    free(buf);
}

static od_snapshot *load_file(const char *path, od_error *err, od_status *st)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    od_input *in;
    assert_int_equal(od_input_open_file(f, &in, err), OD_OK);
    od_snapshot *s = NULL;
    *st = od_snapshot_load(in, &s, err);
    od_input_close(in);
    fclose(f);
    return s;
}

static void loads_real_snapshots(void **state)
{
    (void)state;
    od_error err;
    od_status st;
    /* snap_train_oom: 635 trace entries with one oom (per Python's pickle.load of the file) */
    od_snapshot *s = load_file("tests/data/snapshots/snap_train_oom.pickle", &err, &st);
    assert_int_equal(st, OD_OK);
    assert_int_equal(s->torch_major, 2);
    assert_int_equal(s->n_traces, 1);
    assert_int_equal(s->traces[0].n_entries, 635);
    size_t ooms = 0;
    for (size_t i = 0; i < s->traces[0].n_entries; i++)
        if (od_trace_action(&s->traces[0], i) == OD_ACT_OOM) {
            ooms++;
            assert_true(od_trace_at(&s->traces[0], i).size == 134217728);
            assert_true(od_trace_at(&s->traces[0], i).device_free == 135794262016ull);
        }
    assert_int_equal(ooms, 1);
    assert_int_equal(s->n_segments, 91);
    od_snapshot_free(s);
    /* gzip, expandable settings recorded */
    s = load_file("tests/data/snapshots/snap_train_big.pickle.gz", &err, &st);
    assert_int_equal(st, OD_OK);
    assert_true(s->traces[0].n_entries > 0);
    od_snapshot_free(s);
    s = load_file("tests/data/snapshots/frag_expandable.pickle", &err, &st);
    assert_int_equal(st, OD_OK);
    assert_true(s->settings.expandable_segments);
    assert_string_equal(s->settings.alloc_conf, "expandable_segments:True");
    for (size_t i = 0; i < s->n_segments; i++)
        assert_true(s->segments[i].is_expandable);
    od_snapshot_free(s);
    s = load_file("tests/data/snapshots/snap_train_maxsplit.pickle", &err, &st);
    assert_int_equal(st, OD_OK);
    assert_true(s->settings.max_split_size == 64ll << 20);
    od_snapshot_free(s);
}

/* A snapshot from a pipe: the caller takes the first 4096 bytes to tell its kind (as the
 * CLI does), then loads it on from there through od_input_open_resumed. The real
 * snap_train_oom loads as from the file itself (635 entries, one oom, 91 segments), and read a
 * few bytes at a time the resumed stream gives the file's bytes, taken ones first. */
static void resumed_input_goes_on_from_the_head(void **state)
{
    (void)state;
    const char *path = "tests/data/snapshots/snap_train_oom.pickle";
    for (int pass = 0; pass < 2; pass++) {
        FILE *f = fopen(path, "rb");
        assert_non_null(f);
        od_input *rest = NULL, *in = NULL;
        od_error err;
        assert_int_equal(od_input_open_file(f, &rest, &err), OD_OK);
        unsigned char head[4096];
        size_t head_len = 0;
        const unsigned char *d = NULL, *pending = NULL;
        size_t n = 0, pending_len = 0;
        while (head_len < sizeof head && (n = od_input_borrow(rest, &d)) > 0) {
            size_t k = n < sizeof head - head_len ? n : sizeof head - head_len;
            memcpy(head + head_len, d, k);
            head_len += k;
            pending = d + k;
            pending_len = n - k;
        }
        assert_int_equal(head_len, sizeof head);
        assert_int_equal(od_input_open_resumed(head, head_len, pending, pending_len, rest, &in, &err), OD_OK);
        if (pass == 0) {
            od_snapshot *s = NULL;
            assert_int_equal(od_snapshot_load(in, &s, &err), OD_OK);
            assert_int_equal(s->n_traces, 1);
            assert_int_equal(s->traces[0].n_entries, 635);
            assert_int_equal(s->n_segments, 91);
            od_snapshot_free(s);
        } else {
            FILE *g = fopen(path, "rb");
            assert_non_null(g);
            unsigned char a[7], b[7];
            size_t total = 0, got;
            while ((got = od_input_read(in, a, sizeof a)) > 0) {
                assert_int_equal(fread(b, 1, got, g), got);
                assert_memory_equal(a, b, got);
                total += got;
            }
            assert_int_equal(fread(b, 1, 1, g), 0);
            assert_true(total > sizeof head);
            assert_int_equal(od_input_error(in, &err), OD_OK);
            fclose(g);
        }
        od_input_close(in);
        od_input_close(rest);
        fclose(f);
    }
}

/* The one-step paths for dicts and lists give what running each opcode on its own gives,
 * on real snapshots (tree, every absorb-hook call, status). */
static void fast_paths_match_opcode_by_opcode(void **state)
{
    (void)state;
    static const char *const files[] = {
        "tests/data/snapshots/frag_default.pickle",        "tests/data/snapshots/frag_default_70.pickle",
        "tests/data/snapshots/frag_expandable.pickle",     "tests/data/snapshots/leak_eval_no_grad.pickle",
        "tests/data/snapshots/noleak_eval.pickle",         "tests/data/snapshots/snap_train_default.pickle",
        "tests/data/snapshots/snap_train_expandable.pickle", "tests/data/snapshots/snap_train_maxsplit.pickle",
        "tests/data/snapshots/snap_train_oom.pickle",      "tests/data/extra/torch113_layout.pickle",
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        FILE *f = fopen(files[i], "rb");
        assert_non_null(f);
        assert_int_equal(fseek(f, 0, SEEK_END), 0);
        long n = ftell(f);
        assert_true(n > 0);
        rewind(f);
        unsigned char *data = malloc((size_t)n);
        assert_non_null(data);
        assert_int_equal(fread(data, 1, (size_t)n, f), (size_t)n);
        fclose(f);
        if (pp_compare(data, (size_t)n, 0) != 0)
            fail_msg("%s: the one-step paths differ from opcode-by-opcode reading", files[i]);
        /* The small ones again, arriving in chunks that split every kind of opcode. */
        static const size_t chunks[] = {1, 3, 64, 4097};
        for (size_t c = 0; n < 100000 && c < sizeof chunks / sizeof chunks[0]; c++)
            if (pp_compare(data, (size_t)n, chunks[c]) != 0)
                fail_msg("%s: reading in chunks of %zu bytes differs", files[i], chunks[c]);
        free(data);
    }
}

static void rejects_non_snapshots(void **state)
{
    (void)state;
    od_input *in;
    od_error err;
    od_snapshot *s;
    /* a valid pickle of a list of ints is not a snapshot */
    unsigned char ints[] = {0x80, 4, ']', '(', 'K', 1, 'K', 2, 'e', '.'};
    assert_int_equal(od_input_open_memory(ints, sizeof ints, &in, &err), OD_OK);
    assert_int_equal(od_snapshot_load(in, &s, &err), OD_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "segments"));
    od_input_close(in);
    /* a dict without segments */
    unsigned char d[] = {0x80, 4, '}', '.'};
    assert_int_equal(od_input_open_memory(d, sizeof d, &in, &err), OD_OK);
    assert_int_equal(od_snapshot_load(in, &s, &err), OD_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "'segments'"));
    od_input_close(in);
    /* block events without the addr or size every release writes */
    assert_int_equal(od_input_open_memory(alloc_without_addr, sizeof alloc_without_addr, &in, &err), OD_OK);
    assert_int_equal(od_snapshot_load(in, &s, &err), OD_ERR_FORMAT);
    assert_string_equal(err.msg, "trace entry 'alloc' has no 'addr'");
    od_input_close(in);
    assert_int_equal(od_input_open_memory(free_without_size, sizeof free_without_size, &in, &err), OD_OK);
    assert_int_equal(od_snapshot_load(in, &s, &err), OD_ERR_FORMAT);
    assert_string_equal(err.msg, "trace entry 'free_completed' has no 'size'");
    od_input_close(in);
    /* gzip magic followed by garbage */
    unsigned char gz[] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0xde, 0xad, 0xbe, 0xef};
    assert_int_equal(od_input_open_memory(gz, sizeof gz, &in, &err), OD_OK);
    assert_int_equal(od_snapshot_load(in, &s, &err), OD_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "gzip"));
    od_input_close(in);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reads_protocols_2_to_5),
        cmocka_unit_test(refuses_global_with_offset),
        cmocka_unit_test(refuses_every_code_opcode),
        cmocka_unit_test(every_truncation_fails_cleanly),
        cmocka_unit_test(absurd_lengths_cost_nothing),
        cmocka_unit_test(shares_equal_lists),
        cmocka_unit_test(repeated_bytes_after_a_memo_overwrite),
        cmocka_unit_test(wide_memo_values),
        cmocka_unit_test(record_runs),
        cmocka_unit_test(grows_long_lists),
        cmocka_unit_test(refuses_modifying_a_placed_list),
        cmocka_unit_test(nesting_is_bounded),
        cmocka_unit_test(stack_is_bounded),
        cmocka_unit_test(popped_containers_are_freed),
        cmocka_unit_test(loads_real_snapshots),
        cmocka_unit_test(resumed_input_goes_on_from_the_head),
        cmocka_unit_test(rejects_non_snapshots),
        cmocka_unit_test(fast_paths_match_opcode_by_opcode),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
