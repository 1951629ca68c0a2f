/* iterations.h - training iterations inside a snapshot's trace, live memory at each
 * iteration boundary, and the code sites whose allocations survive iterations (the
 * dangling-graph hunt: a loss tensor kept instead of loss.item(), an eval loop without
 * torch.no_grad()).
 *
 * Boundaries are the trace model's (trace.h): Optimizer.step START annotations, one per
 * training step, when the snapshot has them; otherwise the allocation (stack and size)
 * that repeats once per loop iteration.
 *
 * od_iterations_find returns a result the caller frees with od_iterations_free (NULL is
 * fine); every string and array inside belongs to it. */
#ifndef OD_ITERATIONS_H
#define OD_ITERATIONS_H

#include "model/trace.h"
#include "oomdoc/snapshot.h"
#include "read/trend.h"

/* Where the boundaries come from (trace.h's od_boundary_source, value for value). */
typedef enum {
    OD_ITER_NONE = OD_BOUNDARY_NONE,               /* fewer than 3 boundaries found */
    OD_ITER_ANNOTATIONS = OD_BOUNDARY_ANNOTATIONS, /* Optimizer.step START annotations */
    OD_ITER_PATTERN = OD_BOUNDARY_PATTERN          /* a loop of period N: an allocation
                                                      that repeats once per iteration */
} od_iter_source;

typedef struct {
    size_t entry;         /* index of the first trace entry at or after the boundary */
    uint64_t time_us;
    uint64_t live_bytes;  /* live block bytes at the boundary (trace.h), memory from
                             before the trace included */
    uint64_t peak_bytes;  /* the highest live block bytes from this boundary to the next
                             (to the end of the trace for the last) */
    size_t peak_entry;    /* where that was first reached */
} od_iteration;

/* A site whose allocations outlive the iteration that made them. */
typedef struct {
    char *site;                    /* "file:line:function" (see sites.h) */
    char *where;                   /* innermost frame outside torch */
    uint64_t bytes_per_iteration;  /* median over the judged iterations of the bytes made
                                      in one and still live at the last boundary */
    uint64_t surviving_bytes;      /* their total over the judged iterations */
    uint64_t iterations;           /* judged iterations in which it left bytes behind */
    uint64_t held_at_end_bytes;    /* every block made here that the trace never frees: all
                                      iterations, the warm-up and the last ones included */
    uint64_t judged_held_bytes;    /* of surviving_bytes, still live at the end: only these
                                      make a leak (od_iterations_leak) */
    size_t released_index;         /* the first free of the rest (entry), or SIZE_MAX */
    char *released_at;             /* that free's site, "" when none was released */
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
    uint64_t held_bytes_per_iteration;      /* the same over survivors whose judged bytes are
                                               still held at the end */
} od_iterations;

/* The iterations of a trace, at its boundaries (trace.h). use_annotations = 0 ignores
 * the annotations (the pattern is used; for tests and for snapshots whose annotations
 * lie). A snapshot without a trace gives source OD_ITER_NONE. Fails with OD_ERR_NOMEM. */
od_status od_iterations_find(const od_trace *t, int use_annotations, od_iterations **out, od_error *err);
void od_iterations_free(od_iterations *it);

/* Whether the iterations show a leak, the one judgement doctor, trend and the report give:
 * live memory at the boundaries grows (the fit's verdict leak) AND allocations made in the
 * judged iterations survive to the last boundary and are still held at the end of the
 * trace, accounting for a real share of the growth (1 MiB and a quarter of it). Growth
 * alone can be a cache warming up; what accumulates and is then released before the trace
 * ends is bounded accumulation, not a leak. */
int od_iterations_leak(const od_iterations *it);

/* The trend of live memory at the boundaries as every view names it: the fit's verdict,
 * except that growth the release finding bounds (the fit says leak but od_iterations_leak
 * does not) is OD_TREND_STABLE with *bounded set (bounded may be NULL). -1 without a fit. */
int od_iterations_verdict(const od_iterations *it, int *bounded);

/* A generate() run read from its trace: no backward (every allocation has Python frames)
 * and frames of generation itself: a frame named generate (or transformers' _sample,
 * _beam_search, ...), transformers' generation/utils.py or its cache_utils. Its loop's
 * iterations are the decode steps. A loop without such frames is no inference, whatever
 * it repeats. */
typedef struct {
    int is_inference;
    uint64_t decode_steps;             /* loop iterations seen in the trace */
    uint64_t kv_cache_bytes_per_token; /* growth of live bytes per decode step (one new
                                          position for the whole batch) when it climbs on
                                          a straight line (r2 >= 0.9); 0 otherwise */
    int recomputes_each_step;          /* each step allocates more than the one before
                                          (work grows with the position) while live
                                          memory stays flat: no KV cache is kept, so
                                          every step runs the whole sequence again */
    uint64_t weights_bytes;            /* blocks made under the model's init / loading
                                          frames, or live before the trace began without
                                          frames, and live through its last decode step
                                          (freed only after it, or never): the weights */
    double step_growth_ratio;          /* last step's allocated bytes / the first's */
} od_inference;

/* Recognize an inference trace and its decode steps (it: od_iterations_find's result for
 * t). Never fails; out->is_inference 0 for a training trace. */
void od_inference_find(const od_trace *t, const od_iterations *it, od_inference *out);

const char *od_iter_source_name(od_iter_source s); /* "none", "annotations", "pattern" */

#endif
