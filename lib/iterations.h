/* iterations.h - training iterations inside a snapshot's trace, live memory at each
 * iteration boundary, and the code sites whose allocations survive iterations (the
 * dangling-graph hunt: a loss tensor kept instead of loss.item(), an eval loop without
 * torch.no_grad()).
 *
 * Boundaries come from external_annotations (Optimizer.step START, one per training
 * step) when the snapshot has them; otherwise from the trace itself: the allocation
 * (stack and size) that repeats once per iteration.
 *
 * od_iterations_find returns a result the caller frees with od_iterations_free (NULL is
 * fine); every string and array inside belongs to it. */
#ifndef OD_ITERATIONS_H
#define OD_ITERATIONS_H

#include "snapshot.h"
#include "trend.h"

typedef enum {
    OD_ITER_NONE,         /* fewer than 3 boundaries found: no per-iteration figures */
    OD_ITER_ANNOTATIONS,  /* external_annotations (e.g. Optimizer.step START) */
    OD_ITER_PATTERN       /* an allocation that repeats once per iteration */
} od_iter_source;

typedef struct {
    size_t entry;         /* index of the first trace entry at or after the boundary */
    uint64_t time_us;
    uint64_t live_bytes;  /* live at the boundary: requests rounded to 512 B as the
                             allocator does, memory from before the trace included */
} od_iteration;

/* A site whose allocations outlive the iteration that made them. */
typedef struct {
    char *site;                    /* "file:line:function" (see sites.h) */
    char *where;                   /* innermost frame outside torch */
    uint64_t bytes_per_iteration;  /* median over the judged iterations of the bytes made
                                      in one and still live at the last boundary */
    uint64_t surviving_bytes;      /* their total over the judged iterations */
    uint64_t iterations;           /* judged iterations in which it left bytes behind */
} od_survivor;

typedef struct {
    int64_t device;
    od_iter_source source;
    char marker[512];             /* the annotation name, or the repeating allocation's site */
    od_iteration *items;          /* the boundaries, in trace order */
    size_t n;
    int have_fit;                 /* live_bytes over the boundaries, fitted as a step log */
    od_trend_fit fit;             /* growth_per_x: bytes per iteration */
    size_t judged;                /* iterations judged for survivors: the 2nd .. 3rd-last */
    od_survivor *survivors;       /* sorted by bytes_per_iteration, then surviving, then site */
    size_t n_survivors;
    uint64_t surviving_bytes_per_iteration; /* sum of the survivors' bytes_per_iteration */
} od_iterations;

/* Find the iterations of device's trace. use_annotations = 0 ignores the annotations
 * (the pattern is used; for tests and for snapshots whose annotations lie). A snapshot
 * without a trace gives source OD_ITER_NONE. Fails with OD_ERR_NOMEM only. */
od_status od_iterations_find(const od_snapshot *s, int64_t device, int use_annotations,
                             od_iterations **out, od_error *err);
void od_iterations_free(od_iterations *it);

/* Live bytes before the trace began (requests rounded), as od_iterations counts them. */
uint64_t od_trace_start_live_bytes(const od_snapshot *s, const od_device_trace *tr);

const char *od_iter_source_name(od_iter_source s); /* "none", "annotations", "pattern" */

#endif
