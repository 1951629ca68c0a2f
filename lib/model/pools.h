/* pools.h - memory per allocator pool and per stream, from a snapshot's segments.
 *
 * Per device: one od_pool_usage per segment_pool_id and one od_stream_usage per stream.
 * reserved = the segments' total_size; allocated = their active_allocated blocks' sizes;
 * free (streams) = their inactive blocks' sizes (so reserved = allocated + free + the
 * active_pending_free bytes).
 *
 * How the kind of a pool is decided, from the id PyTorch gives it:
 *   (0, 0)          default: the allocator's own pools ("no pool given").
 *   (N, 0), N > 0   graph: the private pool a CUDA-graph capture makes for itself
 *                   (CUDAGraph::capture_begin without a pool: graph_pool_handle(false)).
 *   (0, N), N > 0   user: a user-created pool, torch.cuda.MemPool() or
 *                   torch.cuda.graph_pool_handle() (also when a capture shares it).
 * Source: create_mempool_id(is_user_created) returns {0, uid_++} for user-created pools
 * and {uuid_++, 0} otherwise, both counters starting at 1 (aten/src/ATen/core/MemPool.cpp;
 * c10/cuda/MemPool.cpp before), capture_begin in aten/src/ATen/cuda/CUDAGraph.cpp, and
 * MemPool.__init__ (is_user_created=True) in torch/cuda/memory.py. A pair with both halves
 * nonzero, which capture_begin refuses, counts as user; so does any other nonzero second.
 *
 * od_pools_compute returns a result the caller frees with od_pools_free (NULL is fine);
 * the arrays inside belong to it. It keeps no pointer into the snapshot. */
#ifndef OD_POOLS_H
#define OD_POOLS_H

#include "oomdoc/snapshot.h"

typedef enum {
    OD_POOL_DEFAULT,
    OD_POOL_GRAPH,
    OD_POOL_USER
} od_pool_kind;

typedef struct {
    int64_t pool_id[2];        /* segment_pool_id */
    od_pool_kind kind;
    uint64_t segments;
    uint64_t reserved_bytes;
    uint64_t allocated_bytes;
} od_pool_usage;

typedef struct {
    uint64_t stream;
    uint64_t reserved_bytes;
    uint64_t allocated_bytes;
    uint64_t free_bytes;
} od_stream_usage;

typedef struct {
    int64_t device;
    od_pool_usage *pools;      /* sorted by pool_id (so the default pool comes first) */
    size_t n_pools;
    od_stream_usage *streams;  /* sorted by stream */
    size_t n_streams;
} od_device_pools;

typedef struct {
    od_device_pools *devices;  /* the devices that have segments, in device order */
    size_t n_devices;
} od_pools;

/* Group snap's segments by pool and by stream, per device. Fails with OD_ERR_LIMIT when
 * sizes add up to more than 2^64 bytes (absurd input), OD_ERR_NOMEM; *out is then NULL. */
od_status od_pools_compute(const od_snapshot *snap, od_pools **out, od_error *err);
void od_pools_free(od_pools *p);

/* The figures of device, or NULL when it has no segments (p may be NULL). */
const od_device_pools *od_pools_device(const od_pools *p, int64_t device);

/* The kind of a pool id, as above; its name: "default", "graph", "user". */
od_pool_kind od_pool_kind_of(int64_t first, int64_t second);
const char *od_pool_kind_name(od_pool_kind k);

#endif
