/* trace.h - the time model of one device's allocation trace: every allocation's lifetime,
 * the live set and live bytes at any entry, reserved bytes over time, the peak, what was
 * live before a wrapped trace began, and the iteration boundaries. Every module that asks
 * "what was live when" (summary, categorize, iterations, timeline, diagnose, report) asks
 * here; none walks the trace on its own.
 *
 * Definitions (one each):
 *   live           a block is live from its alloc entry until its free_completed entry
 *                  (a deferred free keeps it active until then); blocks live before the
 *                  trace began are those freed before the trace allocates their address,
 *                  and those live at the end whose address the trace never allocates
 *   requested      the size the caller asked for (the trace's alloc.size)
 *   block bytes    the size of the block the allocator handed out: the allocator replay's
 *                  (replay.h) when it reproduces the recorded run; else the block's own
 *                  size in the snapshot for blocks still live at the end, and the request
 *                  rounded to 512 B for the rest; torch.cuda.memory_allocated() sums these
 *   the peak       of block bytes: the first entry at which live block bytes reach their
 *                  maximum (max_memory_allocated()); the peak of requested bytes is kept
 *                  beside it under its own name
 *   reserved       the device's final reserve minus the net segment events recorded after
 *                  each moment (a trace always holds every segment event after its start)
 *   boundaries     iteration boundaries as entry indices: the START of each Optimizer.step
 *                  annotation (torch names them "Optimizer.step#AdamW.step") inside the
 *                  trace, else of the annotation seen most often (3 times or more) there;
 *                  without annotations, the allocation (stack and size) that
 *                  repeats once per loop iteration (a loop of period N, not necessarily a
 *                  training step)
 *
 * od_trace_build returns a model the caller frees with od_trace_free (NULL is fine). It
 * points into the snapshot, which must outlive it. */
#ifndef OD_TRACE_H
#define OD_TRACE_H

#include "oomdoc/snapshot.h"

#define OD_TRACE_BEFORE UINT32_MAX     /* alloc_index of a block live before the trace */
#define OD_TRACE_NEVER UINT32_MAX      /* free index of a block still live at the end */

/* One allocation's lifetime: 24 bytes, a third of a million of them per million trace
 * entries. Its address, request and stack are its alloc entry's (od_life_origin). */
typedef struct {
    uint64_t block_bytes;
    uint32_t alloc_index;    /* its alloc entry, or OD_TRACE_BEFORE */
    uint32_t free_req_index; /* its free_requested entry, or OD_TRACE_NEVER */
    uint32_t free_index;     /* its free_completed entry, or OD_TRACE_NEVER */
    uint32_t before;         /* alloc_index OD_TRACE_BEFORE: its od_trace.before index */
} od_lifetime;

/* Where a lifetime's block came from: the alloc entry's address, requested size and stack
 * (od_snapshot.stacks index; 0: no Python frames), or what the trace or the final
 * segments tell of a block live before the trace began. */
typedef struct {
    uint64_t addr;
    uint64_t requested_bytes;
    uint32_t stack;
} od_life_origin;

typedef enum {
    OD_BOUNDARY_NONE,         /* fewer than 3 boundaries */
    OD_BOUNDARY_ANNOTATIONS,  /* external_annotations (Optimizer.step START, ...) */
    OD_BOUNDARY_PATTERN       /* an allocation that repeats once per loop iteration */
} od_boundary_source;

typedef struct {
    const od_snapshot *snap;
    int64_t device;
    const od_device_trace *entries; /* NULL when the device has no trace */
    size_t n_entries;
    int has_trace;
    od_lifetime *lives;             /* in the order of their first entry; those live
                                       before the trace and never freed in it last */
    size_t n_lives;
    od_life_origin *before;         /* of the lifetimes live before the trace began */
    size_t n_before;
    uint32_t *entry_life;           /* per entry: its lifetime (alloc, free_requested,
                                       free_completed), UINT32_MAX for other entries */
    int blocks_from_replay;         /* block bytes are the verified replay's */
    uint64_t start_requested_bytes; /* live before the trace began */
    uint64_t start_block_bytes;
    int complete;                   /* nothing was live before the trace began */
    /* The peak of block bytes (max_memory_allocated), first reached. */
    int has_peak;                   /* reached by an entry (else: at the start) */
    size_t peak_index;
    uint64_t peak_time_us;
    uint64_t peak_block_bytes;
    uint64_t peak_requested_at_peak; /* requested bytes live at peak_index */
    /* The peak of requested bytes, first reached (snapshot --json's peak_requested_*). */
    int has_peak_requested;
    size_t peak_requested_index;
    uint64_t peak_requested_time_us;
    uint64_t peak_requested_bytes;
    /* Reserved bytes. */
    int has_reserved;               /* the segment events are consistent with the end */
    uint64_t start_reserved_bytes;
    uint64_t max_reserved_bytes;
    /* Iteration boundaries. */
    od_boundary_source boundary_source;
    char boundary_marker[512];      /* the annotation name, or the repeating allocation */
    size_t *boundaries;             /* entry indices, increasing */
    size_t n_boundaries;
} od_trace;

/* Build the model of device's trace. block_units, when not NULL, gives the block size of
 * every alloc entry in OD_SIM_MIN_BLOCK (512) bytes (indexed by entry; from a verified replay, 0:
 * not known); otherwise requests are rounded. A device without a trace gives has_trace 0 and the blocks live at the end as
 * lifetimes. Fails with OD_ERR_LIMIT (trace of 2^32 entries or more, sums past 2^64),
 * OD_ERR_NOMEM. */
od_status od_trace_build(const od_snapshot *snap, int64_t device, const uint32_t *block_units, od_trace **out,
                         od_error *err);

/* Build with the block sizes of the allocator replay when the trace is complete and the
 * replay reproduces every recorded segment event (a trace that ends in OOM is replayed
 * under a cap of the most it ever reserved too); else as od_trace_build(.., NULL, ..). */
od_status od_trace_open(const od_snapshot *snap, int64_t device, od_trace **out, od_error *err);
void od_trace_free(od_trace *t);

/* The device's trace in the snapshot, or NULL. */
const od_device_trace *od_trace_of(const od_snapshot *snap, int64_t device);

/* The address, request and stack of lifetime l of t. */
static inline od_life_origin od_life_of(const od_trace *t, const od_lifetime *l)
{
    if (l->alloc_index == OD_TRACE_BEFORE)
        return t->before[l->before];
    od_trace_entry e = od_trace_at(t->entries, l->alloc_index);
    od_life_origin o = {e.addr, e.size, e.stack};
    return o;
}

/* Whether lifetime l is live just after entry index (index SIZE_MAX: before the first). */
int od_trace_live_after(const od_lifetime *l, size_t index);

/* The peak of live block bytes had the lifetimes with drop[i] != 0 never been made (drop:
 * one byte per t->lives entry; NULL drops none): what a fix that frees them would leave.
 * *at (may be NULL) receives the entry of that peak, SIZE_MAX when it is before the first.
 * 0 when out of memory. */
uint64_t od_trace_peak_without(const od_trace *t, const uint8_t *drop, size_t *at);

/* A walk over the entries keeping live and reserved bytes: init, then step(i) for
 * i = 0, 1, ... in order; the figures hold just after the last entry stepped. */
typedef struct {
    uint64_t live_requested_bytes;
    uint64_t live_block_bytes;
    uint64_t reserved_bytes;
} od_trace_cursor;

static inline void od_trace_cursor_init(const od_trace *t, od_trace_cursor *c)
{
    c->live_requested_bytes = t->start_requested_bytes;
    c->live_block_bytes = t->start_block_bytes;
    c->reserved_bytes = t->start_reserved_bytes;
}

/* Inline: the walks over a million-entry trace call it once per entry. */
static inline void od_trace_cursor_step(const od_trace *t, od_trace_cursor *c, size_t i)
{
    uint32_t li = t->entry_life[i];
    const od_lifetime *l = li != UINT32_MAX ? &t->lives[li] : NULL;
    uint8_t action = od_trace_action(t->entries, i);
    switch (action) {
    case OD_ACT_ALLOC:
        if (l) { /* the lifetime's alloc entry is this one */
            c->live_requested_bytes += od_trace_at(t->entries, i).size;
            c->live_block_bytes += l->block_bytes;
        }
        break;
    case OD_ACT_FREE_COMPLETED:
        if (l && l->free_index == i) {
            uint64_t req = od_life_of(t, l).requested_bytes;
            c->live_requested_bytes -= req < c->live_requested_bytes ? req : c->live_requested_bytes;
            c->live_block_bytes -= l->block_bytes < c->live_block_bytes ? l->block_bytes : c->live_block_bytes;
        }
        break;
    case OD_ACT_SEGMENT_ALLOC:
    case OD_ACT_SEGMENT_MAP:
        c->reserved_bytes += od_trace_at(t->entries, i).size;
        break;
    case OD_ACT_SEGMENT_FREE:
    case OD_ACT_SEGMENT_UNMAP: {
        uint64_t size = od_trace_at(t->entries, i).size;
        c->reserved_bytes -= size < c->reserved_bytes ? size : c->reserved_bytes;
        break;
    }
    default:
        break;
    }
}

/* The boundaries the repeating-allocation rule finds, ignoring annotations (for callers
 * that distrust them, and tests): *out (caller frees; NULL when none is found) and *n, the
 * marker into marker. Fails with OD_ERR_NOMEM only. */
od_status od_trace_pattern_boundaries(const od_trace *t, size_t **out, size_t *n, char *marker, size_t msize);

const char *od_boundary_source_name(od_boundary_source s); /* "none", "annotations", "pattern" */

#endif
