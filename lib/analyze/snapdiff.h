/* snapdiff.h - what changed between two snapshots (before/after a fix, rank vs rank):
 * reserved, allocated, stranded, trace peak, and live bytes by site, largest change first.
 *
 * od_snapdiff_compute reads two summaries (summary.h) and returns a result the caller
 * frees with od_snapdiff_free (NULL is fine); every string inside belongs to it. */
#ifndef OD_SNAPDIFF_H
#define OD_SNAPDIFF_H

#include "analyze/summary.h"

typedef struct {
    char *site;            /* "file:line:function" or a <bucket> (sites.h) */
    char *where;           /* from the side holding more bytes */
    uint64_t before_bytes, after_bytes;
    int64_t change_bytes;  /* after - before */
} od_site_change;

typedef struct {
    int64_t device_before, device_after;   /* -1: absent on that side */
    uint64_t reserved[2], allocated[2], stranded[2], peak[2], segments[2]; /* [0] before, [1] after */
    int have_peak[2];                      /* the side has a trace */
    uint64_t peak_allocated[2];            /* the trace's peak of block bytes (trace.h: what
                                              max_memory_allocated() reports) */
    uint64_t peak_reserved[2];             /* the most reserved over the trace
                                              (max_memory_reserved()) */
    int have_reserved[2];                  /* the trace's segment events account for the
                                              end's segments (trace.h has_reserved) */
    od_site_change *live;                  /* live at the end, by site; |change| descending */
    size_t n_live;
    od_site_change *at_peak;               /* live at the trace's peak, by site */
    size_t n_at_peak;
} od_device_change;

typedef struct {
    od_device_change *devices;
    size_t n_devices;
    /* Each side's allocator policy as PYTORCH_CUDA_ALLOC_CONF text, only what differs from
     * torch's defaults ("" for none), when the snapshot records it (od_snapdiff_settings). */
    int settings_recorded[2];
    char settings[2][256];
    int settings_differ;                   /* both recorded, and not the same policy */
} od_snapdiff;

/* Pair the devices (by id; two single-device snapshots pair whatever their ids, as ranks
 * do) and compare. Fails with OD_ERR_NOMEM only. */
od_status od_snapdiff_compute(const od_summary *before, const od_summary *after, od_snapdiff **out,
                              od_error *err);
void od_snapdiff_free(od_snapdiff *d);

/* Fill d's settings from the two snapshots the summaries came from. Never fails. */
void od_snapdiff_settings(od_snapdiff *d, const od_snapshot *before, const od_snapshot *after);

#endif
