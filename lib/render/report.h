/* report.h - one self-contained HTML page that shows what memory did: inline SVG plots,
 * CSS and script, no external URL of any kind (no CDN, no web font, no image, no request
 * while loading or interacting), so it opens offline, instantly, prints, and follows the
 * browser's dark mode. The static SVGs are the page; the script only enhances them, so
 * with JavaScript disabled the page shows the same plots:
 *   timeline         zoom (wheel, shift-drag a range) and pan (drag) with the ticks
 *                    redrawn, downsampled per pixel at each zoom level; hover names the
 *                    time, live and reserved bytes and the allocation under the pointer
 *                    (allocations stacked in trace order) with its size, category, lifetime
 *                    and full stack; click pins it and highlights its lifetime. The data
 *                    rides in a <script type="application/json"> beside the plot: frames
 *                    and stacks deduplicated, times delta-encoded; every lifetime up to
 *                    30000, else those live at the peak and then the largest.
 *
 * Sections appear as the inputs allow:
 *   diagnosis        doctor's: verdict, evidence, what to do now and in the long term with
 *                    each item's check and command, how to verify (from its document)
 *   at a glance      per snapshot device: peak, reserved, stranded, OOM events
 *   timeline         live requested bytes over trace time, split by the top sites at the
 *                    peak (stacked), reserved bytes from the trace's segment events (and
 *                    from replay_reserved when given), the peak and OOM events marked;
 *                    the allocator replay's peak allocated / reserved (lib/model/replay.h) when
 *                    the model ends in the snapshot's own final state
 *   iterations       live memory at each Optimizer.step boundary and each iteration's peak
 *   segment map      every segment's blocks by state at the end: allocated, pending free,
 *                    free but stranded (in a segment that still holds live blocks), free
 *   sites            live bytes by source line at the peak and at the end
 *   plan             the estimate's breakdown as a stacked bar against the device line
 *                    (od_report_plan, when given)
 *   step logs        per-step / NVML series with the trend fit and verdict
 *   OOM messages     reports found in logs, with triage's verdict
 *   profiler records memory over time (bytes per category stacked for a memory timeline,
 *                    allocated and reserved for a trace) with the forward / backward /
 *                    optimizer phases shaded (profilesvg.h), the peak's composition, and
 *                    the operators and source lines live at the peak
 * The output depends only on the inputs: no clock is read (the caller passes a timestamp
 * text if it wants one), ordering is stable.
 *
 * Nothing here takes ownership: every pointer in od_report_input stays the caller's and
 * must stay valid during od_report_write. */
#ifndef OD_REPORT_H
#define OD_REPORT_H

#include <jansson.h>
#include <stdio.h>

#include "analyze/diagnose.h"
#include "oomdoc/snapshot.h"
#include "read/profile.h"
#include "read/trend.h"
#include "read/triage/triage.h"

/* The plan's breakdown: memory by purpose at the predicted peak, stacked, with the
 * device's usable memory as a line. */
typedef struct {
    const char *title;        /* the workload in words */
    const char *const *category; /* n names ("parameters", ...) */
    const uint64_t *bytes;    /* n values */
    size_t n;
    uint64_t device_bytes;    /* what the device would show (reserve + context); 0 = none */
    uint64_t capacity_bytes;  /* the target's memory; 0 = none */
} od_report_plan;

/* A reserved-bytes sample from elsewhere (allocator replay), on the trace's clock. */
typedef struct {
    uint64_t time_us;
    uint64_t bytes;
} od_report_point;

typedef enum {
    OD_REPORT_SNAPSHOT,       /* a memory snapshot */
    OD_REPORT_SERIES,         /* a per-step log or NVML series */
    OD_REPORT_TRIAGE,         /* OOM messages found in a log */
    OD_REPORT_PROFILE         /* a profiler record (profile.h) */
} od_report_kind;

typedef struct {
    od_report_kind kind;
    const char *name;                      /* shown as the input's name */
    const od_snapshot *snapshot;           /* OD_REPORT_SNAPSHOT */
    const od_report_point *replay_reserved; /* optional: reserved over time from replay */
    size_t n_replay_reserved;
    const od_series *series;               /* OD_REPORT_SERIES */
    const od_triage *triage;               /* OD_REPORT_TRIAGE */
    const od_profile *profile;             /* OD_REPORT_PROFILE; a BFC log's figures may
                                              ride along an OD_REPORT_TRIAGE item */
    const od_profile *phases;              /* optional: a trace of the same run whose
                                              phases shade this item's timeline */
    size_t input;                          /* its index among the diagnosed inputs (with
                                              od_report_input.diagnosed) */
} od_report_item;

typedef struct {
    const od_report_item *items;
    size_t n_items;
    const od_diagnosis *diagnosed;         /* the diagnosis of these inputs, or NULL: its
                                            * summaries and each allocation's category are
                                            * the page's (one categorizer, one pass) */
    const json_t *diagnosis;               /* doctor's document of the same inputs and flags
                                            * (render/doctor_doc.h): embedded verbatim as
                                            * <script type="application/json" id="od-diagnosis">,
                                            * and the diagnosis section is rendered from it;
                                            * NULL: no diagnosis section */
    const od_report_plan *plan;            /* NULL: no plan section */
    const char *generated;                 /* e.g. an ISO time; NULL: not shown */
    size_t max_points;                     /* timeline points per plot; 0 = 2000 */
    size_t top_sites;                      /* sites stacked and listed; 0 = 6 */
    uint64_t capacity_bytes;               /* device memory or per-process cap: trend
                                            * projections, and the allocator replay's cap;
                                            * 0 = none */
} od_report_input;

#define OD_REPORT_DEFAULT_POINTS 2000
#define OD_REPORT_DEFAULT_SITES 6

/* Write the page to out. Fails with OD_ERR_ARG on an item without its data,
 * OD_ERR_LIMIT on absurd sums in a snapshot, OD_ERR_NOMEM, OD_ERR_IO when writing
 * fails. On failure part of the page may have been written. */
od_status od_report_write(const od_report_input *in, FILE *out, od_error *err);

#endif
