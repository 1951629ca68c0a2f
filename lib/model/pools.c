/* pools.c - memory per allocator pool and per stream (see pools.h). */
#include "model/pools.h"

#include "base/mem.h"

#include <assert.h>
#include <stdlib.h>

od_pool_kind od_pool_kind_of(int64_t first, int64_t second)
{
    if (first == 0 && second == 0)
        return OD_POOL_DEFAULT;
    return second == 0 ? OD_POOL_GRAPH : OD_POOL_USER;
}

const char *od_pool_kind_name(od_pool_kind k)
{
    switch (k) {
    case OD_POOL_DEFAULT: return "default";
    case OD_POOL_GRAPH: return "graph";
    case OD_POOL_USER: return "user";
    }
    return "user";
}

/* x + y, setting *overflow when it does not fit. */
static uint64_t add(int *overflow, uint64_t x, uint64_t y)
{
    uint64_t r;
    if (__builtin_add_overflow(x, y, &r))
        *overflow = 1;
    return r;
}

static int cmp_i64(int64_t a, int64_t b)
{
    return (a > b) - (a < b);
}

/* Segments ordered by pool id, then address (qsort on an array of pointers). */
static int by_pool(const void *pa, const void *pb)
{
    const od_segment *a = *(const od_segment *const *)pa, *b = *(const od_segment *const *)pb;
    int c = cmp_i64(a->pool_id[0], b->pool_id[0]);
    if (!c)
        c = cmp_i64(a->pool_id[1], b->pool_id[1]);
    return c ? c : (a->address > b->address) - (a->address < b->address);
}

/* Segments ordered by stream, then address. */
static int by_stream(const void *pa, const void *pb)
{
    const od_segment *a = *(const od_segment *const *)pa, *b = *(const od_segment *const *)pb;
    if (a->stream != b->stream)
        return a->stream > b->stream ? 1 : -1;
    return (a->address > b->address) - (a->address < b->address);
}

/* Sum the sizes of seg's blocks in state into *bytes. */
static void block_bytes(const od_snapshot *snap, const od_segment *seg, od_block_state state,
                        uint64_t *bytes, int *overflow)
{
    for (size_t k = 0; k < seg->n_blocks; k++) {
        const od_block *b = &snap->blocks[seg->first_block + k];
        if (b->state == state)
            *bytes = add(overflow, *bytes, b->size);
    }
}

/* Fill d from the n segments in segs (one device's): pools, then streams. Reorders segs.
 * Returns OD_ERR_NOMEM or OD_OK; *overflow is set when a sum does not fit. */
static od_status fill_device(const od_snapshot *snap, const od_segment **segs, size_t n,
                             od_device_pools *d, int *overflow)
{
    assert(n > 0);
    d->device = segs[0]->device;
    d->pools = calloc(n, sizeof *d->pools);
    d->streams = calloc(n, sizeof *d->streams);
    if (!d->pools || !d->streams)
        return OD_ERR_NOMEM;

    od_sort(segs, n, sizeof *segs, by_pool);
    for (size_t i = 0; i < n; i++) {
        const od_segment *s = segs[i];
        od_pool_usage *p = d->n_pools ? &d->pools[d->n_pools - 1] : NULL;
        if (!p || p->pool_id[0] != s->pool_id[0] || p->pool_id[1] != s->pool_id[1]) {
            p = &d->pools[d->n_pools++];
            p->pool_id[0] = s->pool_id[0];
            p->pool_id[1] = s->pool_id[1];
            p->kind = od_pool_kind_of(s->pool_id[0], s->pool_id[1]);
        }
        p->segments++;
        p->reserved_bytes = add(overflow, p->reserved_bytes, s->total_size);
        block_bytes(snap, s, OD_BLOCK_ACTIVE_ALLOCATED, &p->allocated_bytes, overflow);
    }

    od_sort(segs, n, sizeof *segs, by_stream);
    for (size_t i = 0; i < n; i++) {
        const od_segment *s = segs[i];
        od_stream_usage *t = d->n_streams ? &d->streams[d->n_streams - 1] : NULL;
        if (!t || t->stream != s->stream) {
            t = &d->streams[d->n_streams++];
            t->stream = s->stream;
        }
        t->reserved_bytes = add(overflow, t->reserved_bytes, s->total_size);
        block_bytes(snap, s, OD_BLOCK_ACTIVE_ALLOCATED, &t->allocated_bytes, overflow);
        block_bytes(snap, s, OD_BLOCK_INACTIVE, &t->free_bytes, overflow);
    }
    return OD_OK;
}

od_status od_pools_compute(const od_snapshot *snap, od_pools **out, od_error *err)
{
    *out = NULL;
    od_pools *p = calloc(1, sizeof *p);
    const od_segment **segs = calloc(snap->n_segments ? snap->n_segments : 1, sizeof *segs);
    size_t n_dev = 0;
    for (size_t i = 0; i < snap->n_segments; i++)
        if (i == 0 || snap->segments[i].device != snap->segments[i - 1].device)
            n_dev++;
    if (p)
        p->devices = calloc(n_dev ? n_dev : 1, sizeof *p->devices);
    if (!p || !segs || !p->devices) {
        free(segs);
        od_pools_free(p);
        return od_fail(err, OD_ERR_NOMEM, "out of memory grouping segments by pool");
    }
    int overflow = 0;
    od_status st = OD_OK;
    /* segments are sorted by (device, address): each device is one run */
    for (size_t i = 0; i < snap->n_segments && st == OD_OK;) {
        size_t j = i;
        while (j < snap->n_segments && snap->segments[j].device == snap->segments[i].device) {
            segs[j - i] = &snap->segments[j];
            j++;
        }
        st = fill_device(snap, segs, j - i, &p->devices[p->n_devices++], &overflow);
        i = j;
    }
    free(segs);
    if (st == OD_OK && overflow)
        st = od_fail(err, OD_ERR_LIMIT, "sizes in the snapshot add up to more than 2^64 bytes");
    else if (st != OD_OK)
        st = od_fail(err, st, "out of memory grouping segments by pool");
    if (st != OD_OK) {
        od_pools_free(p);
        return st;
    }
    *out = p;
    return OD_OK;
}

void od_pools_free(od_pools *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->n_devices; i++) {
        free(p->devices[i].pools);
        free(p->devices[i].streams);
    }
    free(p->devices);
    free(p);
}

const od_device_pools *od_pools_device(const od_pools *p, int64_t device)
{
    for (size_t i = 0; p && i < p->n_devices; i++)
        if (p->devices[i].device == device)
            return &p->devices[i];
    return NULL;
}
