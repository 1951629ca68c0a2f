/* tracestore.h - how a snapshot keeps its allocation traces in memory: 8 bytes per entry.
 *
 * A training or serving loop repeats the same allocations (action, address, size, stream,
 * stack) every iteration; only the time moves. So each entry is stored as an index into a
 * table of its distinct other fields (a "key") and its time as an offset from the time of
 * the first entry of its chunk of 4096. A 10 M-entry trace that repeats a training step
 * costs 80 MB here instead of the 480 MB of plain entries. The worst case (no field
 * combination repeated) costs 8 bytes plus one 40-byte key per entry, no more than plain.
 *
 * Readers see entries through od_trace_at(), which rebuilds the plain od_trace_entry.
 * od_trace_store_new returns a store the caller frees with od_trace_store_free (NULL is
 * fine); views (od_device_trace) point into it and live until it is freed. */
#ifndef OD_TRACESTORE_H
#define OD_TRACESTORE_H

#include <stddef.h>
#include <stdint.h>

#include "od.h"

/* Trace actions, as torch names them in device_traces[].action. */
typedef enum {
    OD_ACT_ALLOC,
    OD_ACT_FREE_REQUESTED,
    OD_ACT_FREE_COMPLETED,
    OD_ACT_SEGMENT_ALLOC,
    OD_ACT_SEGMENT_FREE,
    OD_ACT_SEGMENT_MAP,
    OD_ACT_SEGMENT_UNMAP,
    OD_ACT_OOM,
    OD_ACT_SNAPSHOT,
    OD_ACT_OTHER /* an action this version does not know; kept, never interpreted */
} od_action;

/* One trace entry. For OD_ACT_OOM, addr is 0 and device_free holds the device's free
 * bytes; for alloc/free entries, size is the requested size (not the block size). */
typedef struct {
    uint64_t addr;
    uint64_t size;
    uint64_t time_us;
    uint64_t stream;
    uint64_t device_free;
    uint32_t stack;      /* index into od_snapshot.stacks */
    uint8_t action;      /* od_action */
} od_trace_entry;

/* An entry's fields other than its time, and its address's number (addresses are
 * numbered 0, 1, ... in the order the store first meets them), so that a walk can keep
 * per-address state in an array instead of a hash map. */
typedef struct {
    uint64_t addr;
    uint64_t size;
    uint64_t stream;
    uint64_t device_free;
    uint32_t stack;
    uint32_t addr_id;
    uint8_t action;
} od_trace_key;

/* One stored entry: its key and its time relative to its chunk's base. */
typedef struct {
    uint32_t key;
    int32_t dt_us;       /* OD_TRACE_FAR: the time is in the far list */
} od_trace_slot;

#define OD_TRACE_CHUNK_BITS 12
#define OD_TRACE_FAR INT32_MIN

/* One device's trace: entries [first, first + n_entries) of a store. */
typedef struct {
    int64_t device;
    size_t n_entries;
    size_t first;                 /* index of entry 0 in the store */
    const od_trace_slot *slots;   /* the store's, indexed by first + i */
    const uint64_t *base_us;      /* per chunk of the store: the time of its first entry */
    const od_trace_key *keys;
    const uint64_t *far;          /* (store index, time_us) pairs by index: times more
                                     than 2^31 us from their chunk's base */
    size_t n_far;
    size_t n_addrs;               /* addr_id < n_addrs */
} od_device_trace;

/* The time of a store entry whose offset did not fit (pure: walks that read only the
 * action let the compiler drop the call). */
OD_API uint64_t od_trace_far_time(const od_device_trace *t, size_t store_index) __attribute__((pure));

/* Entry i (< t->n_entries) of the trace. Inline: walks over ten million entries call it
 * once per entry. */
static inline od_trace_entry od_trace_at(const od_device_trace *t, size_t i)
{
    size_t j = t->first + i;
    od_trace_slot s = t->slots[j];
    const od_trace_key *k = &t->keys[s.key];
    od_trace_entry e;
    e.addr = k->addr;
    e.size = k->size;
    e.stream = k->stream;
    e.device_free = k->device_free;
    e.stack = k->stack;
    e.action = k->action;
    e.time_us = s.dt_us != OD_TRACE_FAR ? t->base_us[j >> OD_TRACE_CHUNK_BITS] + (uint64_t)(int64_t)s.dt_us
                                        : od_trace_far_time(t, j);
    return e;
}

/* The number of entry i's address (see od_trace_key). */
static inline uint32_t od_trace_addr_id(const od_device_trace *t, size_t i)
{
    return t->keys[t->slots[t->first + i].key].addr_id;
}

/* Just the action, the commonest question of a walk. */
static inline uint8_t od_trace_action(const od_device_trace *t, size_t i)
{
    return t->keys[t->slots[t->first + i].key].action;
}

typedef struct od_trace_store od_trace_store;

OD_API od_trace_store *od_trace_store_new(void);
/* Append an entry; 0 when out of memory or past 2^32 entries or keys (store unchanged). */
OD_API int od_trace_store_add(od_trace_store *s, const od_trace_entry *e);
OD_API size_t od_trace_store_count(const od_trace_store *s);
/* A view of entries [first, first + n) as device's trace; valid until the store changes
 * or is freed. */
OD_API void od_trace_store_view(const od_trace_store *s, size_t first, size_t n, int64_t device, od_device_trace *out);
/* A store holding e[0 .. n) in order; NULL when out of memory (for traces built by hand:
 * tests, fuzzers). */
OD_API od_trace_store *od_trace_store_of(const od_trace_entry *e, size_t n);
/* Bytes the store holds (for the benchmarks' bytes-per-entry figure). */
OD_API size_t od_trace_store_bytes(const od_trace_store *s);
OD_API void od_trace_store_free(od_trace_store *s);

#endif
