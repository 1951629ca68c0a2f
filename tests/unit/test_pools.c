/* test_pools.c - memory per pool and per stream. Expected figures are read off the
 * fixtures' segments (python3's pickle module on the same files): graph_pool.pickle from
 * tests/data/extra/make_synthetic.py, the real frag_default.pickle, and torch 1.13's
 * layout, which has no segment_pool_id (every segment is in the default pool). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "analyze/summary.h"
#include "model/pools.h"
#include "snapload.h"

#define KiB (1ULL << 10)
#define MiB (1ULL << 20)
#define SIDE_STREAM 796917760ULL /* make_synthetic.py's side stream */

static od_pools *compute(const od_snapshot *s)
{
    od_pools *p = NULL;
    od_error err;
    assert_int_equal(od_pools_compute(s, &p, &err), OD_OK);
    assert_non_null(p);
    return p;
}

/* The pools and the streams each add up to the device's totals (summary.h), and per stream
 * reserved = allocated + free when nothing is pending. */
static void check_totals(const od_snapshot *s, const od_pools *p)
{
    od_summary *sum = NULL;
    od_error err;
    assert_int_equal(od_summarize(s, &sum, &err), OD_OK);
    for (size_t i = 0; i < sum->n_devices; i++) {
        const od_device_summary *ds = &sum->devices[i];
        const od_device_pools *d = od_pools_device(p, ds->device);
        if (!ds->segments) {
            assert_null(d);
            continue;
        }
        assert_non_null(d);
        uint64_t segs = 0, res = 0, alloc = 0;
        for (size_t k = 0; k < d->n_pools; k++) {
            segs += d->pools[k].segments;
            res += d->pools[k].reserved_bytes;
            alloc += d->pools[k].allocated_bytes;
            if (k)
                assert_true(d->pools[k - 1].pool_id[0] < d->pools[k].pool_id[0] ||
                            (d->pools[k - 1].pool_id[0] == d->pools[k].pool_id[0] &&
                             d->pools[k - 1].pool_id[1] < d->pools[k].pool_id[1]));
        }
        assert_int_equal(segs, ds->segments);
        assert_int_equal(res, ds->reserved_bytes);
        assert_int_equal(alloc, ds->allocated_bytes);
        res = alloc = 0;
        for (size_t k = 0; k < d->n_streams; k++) {
            res += d->streams[k].reserved_bytes;
            alloc += d->streams[k].allocated_bytes;
            if (ds->active_bytes == ds->allocated_bytes)
                assert_int_equal(d->streams[k].reserved_bytes,
                                 d->streams[k].allocated_bytes + d->streams[k].free_bytes);
            if (k)
                assert_true(d->streams[k - 1].stream < d->streams[k].stream);
        }
        assert_int_equal(res, ds->reserved_bytes);
        assert_int_equal(alloc, ds->allocated_bytes);
    }
    od_summary_free(sum);
}

static void pool_is(const od_pool_usage *u, int64_t a, int64_t b, od_pool_kind kind, uint64_t segments,
                    uint64_t reserved, uint64_t allocated)
{
    assert_int_equal(u->pool_id[0], a);
    assert_int_equal(u->pool_id[1], b);
    assert_int_equal(u->kind, kind);
    assert_int_equal(u->segments, segments);
    assert_int_equal(u->reserved_bytes, reserved);
    assert_int_equal(u->allocated_bytes, allocated);
}

static void stream_is(const od_stream_usage *u, uint64_t stream, uint64_t reserved, uint64_t allocated,
                      uint64_t free_bytes)
{
    assert_int_equal(u->stream, stream);
    assert_int_equal(u->reserved_bytes, reserved);
    assert_int_equal(u->allocated_bytes, allocated);
    assert_int_equal(u->free_bytes, free_bytes);
}

static void test_kinds(void **state)
{
    (void)state;
    assert_int_equal(od_pool_kind_of(0, 0), OD_POOL_DEFAULT);
    assert_int_equal(od_pool_kind_of(1, 0), OD_POOL_GRAPH);   /* a capture's own pool */
    assert_int_equal(od_pool_kind_of(7, 0), OD_POOL_GRAPH);
    assert_int_equal(od_pool_kind_of(0, 1), OD_POOL_USER);    /* MemPool / graph_pool_handle */
    assert_int_equal(od_pool_kind_of(0, 3), OD_POOL_USER);
    assert_int_equal(od_pool_kind_of(2, 5), OD_POOL_USER);    /* never made by PyTorch */
    assert_string_equal(od_pool_kind_name(OD_POOL_DEFAULT), "default");
    assert_string_equal(od_pool_kind_name(OD_POOL_GRAPH), "graph");
    assert_string_equal(od_pool_kind_name(OD_POOL_USER), "user");
}

/* Ten segments: default (0, 0) on both streams, the capture's pool (1, 0), a MemPool
 * (0, 1) on stream 0 and a graph_pool_handle() pool (0, 2) on the side stream. */
static void test_graph_pool(void **state)
{
    (void)state;
    od_snapshot *s = load_snapshot("tests/data/synthetic/graph_pool.pickle");
    od_pools *p = compute(s);
    assert_int_equal(p->n_devices, 1);
    const od_device_pools *d = od_pools_device(p, 0);
    assert_ptr_equal(d, &p->devices[0]);
    assert_null(od_pools_device(p, 1));
    assert_int_equal(d->n_pools, 4);
    /* weights 16 MiB + 8 KiB, the side stream's 32 MiB cuBLAS workspace, the 4 MiB eager tensor */
    pool_is(&d->pools[0], 0, 0, OD_POOL_DEFAULT, 4, 70 * MiB, 52 * MiB + 8 * KiB);
    pool_is(&d->pools[1], 0, 1, OD_POOL_USER, 2, 22 * MiB, 6 * MiB + 128 * KiB);
    pool_is(&d->pools[2], 0, 2, OD_POOL_USER, 2, 22 * MiB, 4 * MiB + 64 * KiB);
    pool_is(&d->pools[3], 1, 0, OD_POOL_GRAPH, 2, 34 * MiB, 32 * MiB + 512 * KiB + 16 * KiB);
    assert_int_equal(d->n_streams, 2);
    stream_is(&d->streams[0], 0, 60 * MiB, 26 * MiB + 136 * KiB, 34 * MiB - 136 * KiB);
    stream_is(&d->streams[1], SIDE_STREAM, 88 * MiB, 68 * MiB + 592 * KiB, 20 * MiB - 592 * KiB);
    check_totals(s, p);
    od_pools_free(p);
    od_snapshot_free(s);
}

/* A real run: 55 segments, all in the default pool on stream 0. */
static void test_frag_default(void **state)
{
    (void)state;
    od_snapshot *s = load_snapshot("tests/data/snapshots/frag_default.pickle");
    od_pools *p = compute(s);
    assert_int_equal(p->n_devices, 1);
    const od_device_pools *d = od_pools_device(p, 0);
    assert_non_null(d);
    assert_int_equal(d->n_pools, 1);
    pool_is(&d->pools[0], 0, 0, OD_POOL_DEFAULT, 55, 1728053248, 1580665856);
    assert_int_equal(d->n_streams, 1);
    stream_is(&d->streams[0], 0, 1728053248, 1580665856, 147387392);
    check_totals(s, p);
    od_pools_free(p);
    od_snapshot_free(s);
}

/* torch 1.13's list layout has no segment_pool_id: the same segments, one default pool. */
static void test_torch113(void **state)
{
    (void)state;
    od_snapshot *s = load_snapshot("tests/data/extra/torch113_layout.pickle");
    od_pools *p = compute(s);
    const od_device_pools *d = od_pools_device(p, 0);
    assert_non_null(d);
    assert_int_equal(d->n_pools, 1);
    pool_is(&d->pools[0], 0, 0, OD_POOL_DEFAULT, 55, 1728053248, 1580665856);
    assert_int_equal(d->n_streams, 1);
    stream_is(&d->streams[0], 0, 1728053248, 1580665856, 147387392);
    od_pools_free(p);
    od_snapshot_free(s);
}

/* Hand-made: two devices, a pending-free block (neither allocated nor free), no segments. */
static void test_devices_and_pending(void **state)
{
    (void)state;
    od_block blocks[] = {
        {.address = 0x1000, .size = 512, .state = OD_BLOCK_ACTIVE_ALLOCATED},
        {.address = 0x1200, .size = 1024, .state = OD_BLOCK_ACTIVE_PENDING_FREE},
        {.address = 0x1600, .size = 2560, .state = OD_BLOCK_INACTIVE},
        {.address = 0x9000, .size = 4096, .state = OD_BLOCK_INACTIVE},
        {.address = 0x5000, .size = 2048, .state = OD_BLOCK_ACTIVE_ALLOCATED},
    };
    od_segment segs[] = {
        {.device = 0, .address = 0x1000, .total_size = 4096, .stream = 5, .pool_id = {2, 0},
         .first_block = 0, .n_blocks = 3},
        {.device = 0, .address = 0x9000, .total_size = 4096, .stream = 5, .pool_id = {0, 0},
         .first_block = 3, .n_blocks = 1},
        {.device = 2, .address = 0x5000, .total_size = 2048, .stream = 0, .pool_id = {0, 4},
         .first_block = 4, .n_blocks = 1},
    };
    od_snapshot s;
    memset(&s, 0, sizeof s);
    s.segments = segs;
    s.n_segments = 3;
    s.blocks = blocks;
    s.n_blocks = 5;
    od_pools *p = compute(&s);
    assert_int_equal(p->n_devices, 2);
    const od_device_pools *d0 = od_pools_device(p, 0), *d2 = od_pools_device(p, 2);
    assert_non_null(d0);
    assert_non_null(d2);
    assert_null(od_pools_device(p, 1));
    assert_int_equal(d0->n_pools, 2);
    pool_is(&d0->pools[0], 0, 0, OD_POOL_DEFAULT, 1, 4096, 0);
    pool_is(&d0->pools[1], 2, 0, OD_POOL_GRAPH, 1, 4096, 512);
    assert_int_equal(d0->n_streams, 1);
    stream_is(&d0->streams[0], 5, 8192, 512, 2560 + 4096);
    assert_int_equal(d2->n_pools, 1);
    pool_is(&d2->pools[0], 0, 4, OD_POOL_USER, 1, 2048, 2048);
    stream_is(&d2->streams[0], 0, 2048, 2048, 0);
    od_pools_free(p);

    s.n_segments = 0;
    p = compute(&s);
    assert_int_equal(p->n_devices, 0);
    assert_null(od_pools_device(p, 0));
    od_pools_free(p);
    od_pools_free(NULL);
    assert_null(od_pools_device(NULL, 0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kinds),
        cmocka_unit_test(test_graph_pool),
        cmocka_unit_test(test_frag_default),
        cmocka_unit_test(test_torch113),
        cmocka_unit_test(test_devices_and_pending),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
