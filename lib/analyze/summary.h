/* summary.h - the figures `oomdoc snapshot` reports, per device.
 *
 * Definitions (each is checked against an independent python3 computation in the tests):
 *   segments, reserved_bytes       number of segments, sum of their total_size
 *   allocated_bytes / requested    blocks active_allocated: sum of size / requested_size
 *   active_bytes                   blocks active_allocated + active_pending_free
 *   largest_free_block_bytes       largest inactive block
 *   stranded_bytes                 what empty_cache() cannot give back: ordinary segments:
 *                                  the inactive bytes of segments that still hold a
 *                                  non-inactive block; expandable segments: the inactive bytes
 *                                  that share a page (2 MiB small, 20 MiB large, from the
 *                                  segment address) with a non-inactive block
 *   trace                          start_live_requested_bytes: requested bytes live before
 *                                  the (possibly wrapped) trace began; peak_requested_bytes:
 *                                  the maximum of start + alloc - free_completed in order
 *                                  (trace.h defines both, and the peak of block bytes)
 *   top_sites / peak_sites         live bytes by source site at the end / at the peak of
 *                                  block bytes
 *
 * od_summarize returns a summary the caller frees with od_summary_free (NULL is fine). */
#ifndef OD_SUMMARY_H
#define OD_SUMMARY_H

#include "model/trace.h"
#include "oomdoc/snapshot.h"

typedef struct {
    char *site;               /* "file:line:function" or a <bucket> */
    char *where;              /* innermost frame outside torch, or the bucket again */
    uint64_t bytes;           /* block sizes (at the peak: requests rounded as the allocator does, 512 B) */
    uint64_t requested_bytes;
    uint64_t count;
} od_site_total;

typedef struct {
    size_t index;             /* 0-based index into the device's trace */
    uint64_t size_bytes;
    uint64_t device_free_bytes;
    uint64_t time_us;
    char *site;
    char *where;
} od_oom_event;

typedef struct {
    od_site_total *items;     /* sorted by bytes, then requested bytes, then site */
    size_t n;
} od_site_list;

typedef struct {
    int64_t device;
    uint64_t segments;
    uint64_t reserved_bytes;
    uint64_t allocated_bytes;
    uint64_t requested_bytes;
    uint64_t active_bytes;
    uint64_t largest_free_block_bytes;
    uint64_t stranded_bytes;
    uint64_t expandable_segments;
    int has_trace;            /* 0: the snapshot has no trace (torch 1.13) */
    uint64_t entries;
    uint64_t start_live_requested_bytes;
    int complete;             /* start_live_requested_bytes == 0 */
    /* The peak of requested bytes (trace.h's peak_requested_*); the peak of block bytes,
     * what max_memory_allocated() reports, is trace->peak_*. */
    uint64_t peak_requested_bytes;
    int has_peak_requested_entry; /* reached by an entry (else: at the start) */
    size_t peak_requested_index;
    uint64_t peak_requested_time_us;
    uint64_t first_time_us, last_time_us;
    od_oom_event *ooms;
    size_t n_ooms;
    od_site_list top_sites;   /* live at the end (active_allocated blocks) */
    od_site_list peak_sites;  /* live at the peak of block bytes (trace.h); empty without a trace */
    od_trace *trace;          /* the device's trace model (owned; no entries without a trace):
                                 the peak of block bytes and everything over time */
} od_device_summary;

typedef struct {
    od_device_summary *devices; /* in device order: those with segments or trace entries */
    size_t n_devices;
} od_summary;

/* Compute the summary. Fails with OD_ERR_LIMIT if sums overflow 64 bits (absurd input),
 * OD_ERR_NOMEM. */
od_status od_summarize(const od_snapshot *snap, od_summary **out, od_error *err);
void od_summary_free(od_summary *s);

#endif
