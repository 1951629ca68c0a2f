/* timeline.h - one device's memory over trace time, downsampled for plotting: live
 * (requested) bytes split by the sites that held the most at the peak, reserved bytes
 * from the trace's own segment events, and live memory at each iteration boundary.
 *
 * Definitions (live bytes, reserved bytes, the peak and the boundaries are the trace
 * model's, trace.h):
 *   live bytes       live block bytes (what memory_allocated() reports)
 *   points           max_points time buckets over [first, last] trace time; each point is
 *                    the moment its bucket's live bytes were highest (so no peak is lost;
 *                    the peak entry makes its own bucket's point), with the site split at
 *                    that moment; reserved is the bucket's highest
 *   iterations       at each iteration boundary, the live bytes there and the highest live
 *                    bytes since the previous boundary
 *
 * od_timeline_build returns a timeline the caller frees with od_timeline_free (NULL is
 * fine); every array and string inside belongs to it. */
#ifndef OD_TIMELINE_H
#define OD_TIMELINE_H

#include "analyze/summary.h"
#include "model/trace.h"
#include "oomdoc/snapshot.h"

typedef struct {
    uint64_t time_us;          /* the boundary */
    uint64_t live_bytes;       /* live at the boundary */
    uint64_t peak_bytes;       /* highest since the previous boundary (or trace start) */
    uint64_t peak_time_us;
} od_timeline_iteration;

typedef struct {
    int64_t device;
    size_t n_points;
    uint64_t *time_us;         /* n_points, increasing */
    uint64_t *live_bytes;      /* n_points */
    uint64_t *reserved_bytes;  /* n_points; meaningful when has_reserved */
    int has_reserved;          /* reserved could be reconstructed consistently */
    size_t n_groups;           /* top sites, then one group for everything else */
    char **group_site;         /* n_groups; the last is "other sites" */
    uint64_t *group_bytes;     /* n_points * n_groups, row-major: point i, group g */
    uint64_t first_time_us, last_time_us;
    uint64_t peak_live_bytes;  /* exact, not downsampled */
    uint64_t peak_time_us;
    int has_peak;              /* the peak is reached by an entry (not at the start) */
    uint64_t peak_reserved_bytes;
    const char *boundary_name; /* the boundary marker (trace.h), or NULL: points into the trace */
    size_t n_iterations;
    od_timeline_iteration *iterations;
} od_timeline;

/* Build the timeline of device d->device of snap, splitting live bytes by the first
 * top_groups of d->peak_sites (fewer when there are fewer). max_points >= 2. Fails with
 * OD_ERR_ARG when the snapshot has no trace for the device or max_points < 2,
 * OD_ERR_NOMEM. */
od_status od_timeline_build(const od_snapshot *snap, const od_device_summary *d, size_t max_points,
                            size_t top_groups, od_timeline **out, od_error *err);
void od_timeline_free(od_timeline *t);

/* The device's segments and busy blocks at one moment of the trace (after entry `index`),
 * rebuilt from the final segments by undoing the segment events recorded after it, and
 * from the trace model's lifetimes live at that moment (their block bytes, trace.h).
 * Free space is what segments hold outside busy blocks. */
typedef struct {
    uint64_t address, size;
    uint8_t state;             /* OD_BLOCK_ACTIVE_ALLOCATED or OD_BLOCK_ACTIVE_PENDING_FREE */
} od_layout_block;

typedef struct {
    uint64_t address, size;
    size_t first_block, n_blocks; /* busy blocks inside, by address */
} od_layout_segment;

typedef struct {
    od_layout_segment *segments; /* by address */
    size_t n_segments;
    od_layout_block *blocks;
    size_t n_blocks;
    uint64_t reserved_bytes, busy_bytes;
    size_t orphans;            /* busy blocks that fell outside every segment (inconsistent input) */
} od_layout;

/* Fails with OD_ERR_ARG when the device has no trace or index is past its end,
 * OD_ERR_NOMEM. Free with od_layout_free (NULL is fine). */
od_status od_layout_at(const od_trace *t, size_t index, od_layout **out, od_error *err);
void od_layout_free(od_layout *l);

/* The free space of a layout: *stranded, free bytes inside segments that hold a busy block
 * (empty_cache() cannot release them), and *largest, the largest free run in any segment. */
void od_layout_free_space(const od_layout *l, uint64_t *stranded, uint64_t *largest);

#endif
