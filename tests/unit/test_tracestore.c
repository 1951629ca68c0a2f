/* test_tracestore.c - the compact trace storage (tracestore.h): every entry comes back as
 * it went in, whatever its time does, and repeated allocations share one key. The real
 * 1 M-entry fixture is checked against Python's own reading of it in test_pickle.c and
 * the golden tests; this file holds the cases a real trace seldom has. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "oomdoc/tracestore.h"
#include "read/tracepass.h"
#include "snapload.h"

static void assert_same(const od_trace_entry *a, const od_trace_entry *b)
{
    assert_true(a->addr == b->addr);
    assert_true(a->size == b->size);
    assert_true(a->time_us == b->time_us);
    assert_true(a->stream == b->stream);
    assert_true(a->device_free == b->device_free);
    assert_int_equal(a->stack, b->stack);
    assert_int_equal(a->action, b->action);
}

/* Times that jump by more than the 2^31 us an offset holds, backwards, to 0 and to the
 * top of the range, across chunk boundaries: each comes back exactly. */
static void times_round_trip(void **state)
{
    (void)state;
    size_t n = 3 * ((size_t)1 << OD_TRACE_CHUNK_BITS) + 17;
    od_trace_entry *e = calloc(n, sizeof *e);
    assert_non_null(e);
    uint64_t t = 1796051177967777ull; /* a real time_us */
    for (size_t i = 0; i < n; i++) {
        if (i % 1000 == 999)
            t += (uint64_t)1 << 33;          /* two hours and more */
        else if (i % 777 == 5)
            t -= (uint64_t)3 << 30;          /* a clock step back, past an offset's reach */
        else
            t += i % 13;
        e[i].time_us = i == 4100 ? 0 : i == 4101 ? UINT64_MAX : t;
        e[i].action = (uint8_t)(i % 3);
        e[i].addr = 0x7f0000000000ull + (i % 7) * 512;
        e[i].size = 512 * (i % 7 + 1);
        e[i].stack = (uint32_t)(i % 5);
        e[i].stream = i % 11 == 0 ? (uint64_t)-1 : 0;
        e[i].device_free = i % 500 == 0 ? 135794262016ull : 0;
    }
    od_trace_store *s = od_trace_store_of(e, n);
    assert_non_null(s);
    assert_int_equal(od_trace_store_count(s), n);
    od_device_trace tr;
    od_trace_store_view(s, 0, n, 3, &tr);
    assert_int_equal(tr.device, 3);
    assert_int_equal(tr.n_entries, n);
    assert_true(tr.n_far > 0);
    for (size_t i = 0; i < n; i++) {
        od_trace_entry got = od_trace_at(&tr, i);
        assert_same(&got, &e[i]);
        assert_int_equal(od_trace_action(&tr, i), e[i].action);
    }
    /* a view that starts inside the store */
    od_trace_store_view(s, 4000, 200, 0, &tr);
    for (size_t i = 0; i < 200; i++) {
        od_trace_entry got = od_trace_at(&tr, i);
        assert_same(&got, &e[4000 + i]);
    }
    od_trace_store_free(s);
    free(e);
}

/* A loop that repeats its allocations: one key per distinct (action, addr, size, stream,
 * stack, device_free), however many iterations, so the store grows by 8 B an entry. */
static void repeats_share_keys(void **state)
{
    (void)state;
    od_trace_store *s = od_trace_store_new();
    assert_non_null(s);
    od_trace_entry e = {0};
    for (size_t it = 0; it < 1000; it++)
        for (uint8_t a = 0; a < 3; a++)
            for (size_t k = 0; k < 10; k++) {
                e.action = a;
                e.addr = 0x7f0000000000ull + k * 4096;
                e.size = 4096;
                e.time_us = 1000 + it * 100 + k;
                assert_true(od_trace_store_add(s, &e));
            }
    size_t n = od_trace_store_count(s);
    assert_int_equal(n, 30000);
    /* ten addresses, numbered in the order they first came, whatever the action */
    od_device_trace tr;
    od_trace_store_view(s, 0, n, 0, &tr);
    assert_int_equal(tr.n_addrs, 10);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(od_trace_addr_id(&tr, i), i % 10);
    size_t bytes = od_trace_store_bytes(s);
    assert_true(bytes < n * sizeof(od_trace_slot) + 64 * 1024);
    assert_true(bytes >= n * sizeof(od_trace_slot));
    od_trace_store_free(s);
}

/* The compact stream gives back, in order, exactly what went in: the same entries as
 * times_round_trip (times far apart, backwards, 0 and the top of the range), then a
 * repeating loop, which costs a byte or so an entry. */
static void stream_round_trip(void **state)
{
    (void)state;
    size_t n = 3 * ((size_t)1 << OD_TRACE_CHUNK_BITS) + 17, loop = 30000;
    od_trace_entry *e = calloc(n + loop, sizeof *e);
    assert_non_null(e);
    uint64_t t = 1796051177967777ull;
    for (size_t i = 0; i < n; i++) {
        if (i % 1000 == 999)
            t += (uint64_t)1 << 33;
        else if (i % 777 == 5)
            t -= (uint64_t)3 << 30;
        else
            t += i % 13;
        e[i].time_us = i == 4100 ? 0 : i == 4101 ? UINT64_MAX : t;
        e[i].action = (uint8_t)(i % 3);
        e[i].addr = 0x7f0000000000ull + (i % 7) * 512;
        e[i].size = 512 * (i % 7 + 1);
        e[i].stack = (uint32_t)(i % 5);
        e[i].stream = i % 11 == 0 ? (uint64_t)-1 : 0;
        e[i].device_free = i % 500 == 0 ? 135794262016ull : 0;
    }
    for (size_t i = 0; i < loop; i++) {
        od_trace_entry *x = &e[n + i];
        x->action = (uint8_t)(i / 10 % 3);
        x->addr = 0x7f0000000000ull + i % 10 * 4096;
        x->size = 4096;
        x->time_us = 5000000 + i * 7 + (i % 100 == 0 ? 100000 : 0);
    }
    od_trace_store *s = od_trace_store_new_stream();
    assert_non_null(s);
    for (size_t i = 0; i < n + loop; i++)
        assert_true(od_trace_store_add(s, &e[i]));
    size_t before_loop = 0;
    od_trace_stream *r = od_trace_stream_open(s);
    assert_non_null(r);
    od_trace_entry got;
    for (size_t i = 0; i < n + loop; i++) {
        assert_true(od_trace_stream_next(r, &got));
        assert_same(&got, &e[i]);
    }
    assert_false(od_trace_stream_next(r, &got));
    od_trace_stream_close(r);
    /* the loop's 30000 entries: one header byte each, 30 keys, and a varint per hundred */
    od_trace_store *l = od_trace_store_new_stream();
    for (size_t i = 0; i < loop; i++)
        assert_true(od_trace_store_add(l, &e[n + i]));
    before_loop = od_trace_store_bytes(l);
    assert_true(before_loop < loop * 11 / 10 + 64 * 1024);
    od_trace_store_free(l);
    od_trace_store_free(s);
    free(e);
}

/* The loader hands the real fixture's trace over as one view: its first entries, as
 * Python's pickle.load of the file reads them. */
static void loader_entries(void **state)
{
    (void)state;
    od_snapshot *snap = load_snapshot("tests/data/snapshots/snap_train_oom.pickle");
    const od_device_trace *tr = &snap->traces[0];
    assert_int_equal(tr->n_entries, 635);
    od_trace_entry first = od_trace_at(tr, 0);
    /* pickle.load(...)['device_traces'][0][0] */
    assert_int_equal(first.action, OD_ACT_SEGMENT_ALLOC);
    assert_true(first.addr == 139642470924288ull);
    assert_true(first.size == 2097152);
    assert_true(first.time_us == 1796050985669049ull);
    assert_true(first.stream == 0);
    assert_true(first.stack != 0);
    od_snapshot_free(snap);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(times_round_trip),
        cmocka_unit_test(repeats_share_keys),
        cmocka_unit_test(stream_round_trip),
        cmocka_unit_test(loader_entries),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
