/* profile.h - memory records written by profilers, read into one model: a timeline
 * (allocated / reserved / bytes per category over time), the peak and what it was made
 * of, training phases, and rankings of the operators and source lines that allocate.
 *
 * Inputs, detected from their bytes (plain or gzipped):
 *  - PyTorch profiler Chrome trace (prof.export_chrome_trace, profile_memory=True): the
 *    `[memory]` instant events give allocated/reserved over time; each allocation is
 *    attributed to the innermost enclosing cpu_op / user annotation on its thread and,
 *    with with_stack, to the innermost Python frame. Read as a stream.
 *  - PyTorch prof.export_memory_timeline("x.json"): [times_us, sizes], sizes rows being
 *    [0, parameter, optimizer_state, input, temporary, activation, gradient,
 *    autograd_detail, unknown] (torch/profiler/_memory_profiler.py: index 0 is padding,
 *    columns follow _CATEGORY_TO_COLORS' order, None = unknown last).
 *  - PyTorch prof.key_averages().table(...) text: per-operator self device memory.
 *  - JAX jax.profiler.save_device_memory_profile (gzipped pprof): live buffers by kind,
 *    device and Python frame (pprof.h reads the protobuf).
 *  - JAX device.memory_stats() dumped as JSON (top level, or under "memory_stats").
 *  - XLA / TensorFlow BFC allocator log lines ("ran out of memory trying to allocate ...
 *    (rounded to N)", chunk and bin summaries, the Stats block, the occupancy bar).
 *
 * od_profile_load returns a profile the caller frees with od_profile_free (NULL is
 * fine); every pointer inside is owned by the profile. */
#ifndef OD_PROFILE_H
#define OD_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "oomdoc/input.h"
#include "oomdoc/od.h"
#include "read/trend.h"

typedef enum {
    OD_PROFILE_TORCH_TRACE,
    OD_PROFILE_TORCH_TIMELINE,
    OD_PROFILE_TORCH_TABLE,
    OD_PROFILE_JAX_PPROF,
    OD_PROFILE_JAX_STATS,
    OD_PROFILE_BFC_LOG,
    OD_PROFILE_KIND_COUNT
} od_profile_kind;

/* torch's memory profiler categories, in export_memory_timeline's column order. */
typedef enum {
    OD_PCAT_PARAMETER,
    OD_PCAT_OPTIMIZER_STATE,
    OD_PCAT_INPUT,
    OD_PCAT_TEMPORARY,
    OD_PCAT_ACTIVATION,
    OD_PCAT_GRADIENT,
    OD_PCAT_AUTOGRAD_DETAIL,
    OD_PCAT_UNKNOWN,
    OD_PCAT_COUNT
} od_profile_category;

typedef enum { OD_PHASE_OTHER, OD_PHASE_FORWARD, OD_PHASE_BACKWARD, OD_PHASE_OPTIMIZER, OD_PHASE_COUNT } od_phase;

/* A stretch of the trace in one phase. Times are microseconds from the first point. */
typedef struct {
    od_phase phase;
    double start_us, end_us;
    uint64_t peak_allocated_bytes;   /* highest allocated inside the span (0: no sample) */
} od_profile_span;

/* A training step, ending with its optimizer step (times from the first point). */
typedef struct {
    double end_us;
    uint64_t allocated_bytes;       /* right after the optimizer step */
    uint64_t reserved_bytes;        /* same moment (trace only) */
    uint64_t peak_allocated_bytes;  /* highest since the previous step ended */
} od_profile_step;

/* One line of a ranking: an operator, a source line, a buffer kind... */
typedef struct {
    char *name;
    int64_t bytes;      /* live bytes at the peak, or net bytes (self memory), per ranking */
    uint64_t count;     /* allocations (trace), calls (table), buffers (pprof) */
} od_profile_rank;

typedef struct {
    od_profile_rank *v;
    size_t n;
} od_profile_ranking;

/* JAX memory_stats() figures; has_* says which the input carried. */
typedef struct {
    uint64_t bytes_in_use, peak_bytes_in_use, largest_free_block_bytes, bytes_limit;
    uint64_t bytes_reserved, peak_bytes_reserved, pool_bytes, peak_pool_bytes;
    uint64_t num_allocs, largest_alloc_size;
    int has_bytes_in_use, has_peak_bytes_in_use, has_largest_free_block_bytes, has_bytes_limit;
    int has_bytes_reserved, has_peak_bytes_reserved, has_pool_bytes, has_peak_pool_bytes;
    int has_num_allocs, has_largest_alloc_size;
} od_profile_stats;

/* Set the figure JAX's memory_stats() key names to value (has_ too); 0 when key names
 * none of them. The one list of JAX's keys: the profile reader's and the triage's. */
int od_jax_stats_set(od_profile_stats *s, const char *key, uint64_t value);

/* What a BFC allocator log says. */
typedef struct {
    char allocator[64];             /* "GPU_0_bfc" */
    uint64_t requested_bytes;       /* the "(rounded to N)" figure; 0 when absent */
    int has_request, has_summary;   /* the OOM line; "Current allocation summary follows" */
    uint64_t limit_bytes, in_use_bytes, max_in_use_bytes;  /* Stats block (0 = absent) */
    int has_stats;
    uint64_t free_chunk_bytes, largest_free_chunk_bytes, in_use_chunk_bytes;
    uint64_t n_free_chunks, n_in_use_chunks;
    uint64_t bar_cells, bar_free_cells;  /* the occupancy bar: '_' cells are free */
} od_profile_bfc;

typedef struct {
    od_profile_kind kind;

    /* Timeline (trace, memory timeline): n_points samples sorted by time. */
    size_t n_points;
    double origin_us;               /* time of the first point, on the file's clock */
    int has_epoch;                  /* origin_epoch_us is known */
    double origin_epoch_us;         /* the same instant in microseconds since the Unix
                                       epoch: a trace's ts plus its baseTimeNanoseconds,
                                       a memory timeline's own times. Lines up a trace's
                                       phases with a memory timeline of the same run. */
    double *time_us;                /* from origin_us */
    uint64_t *allocated_bytes;      /* trace: Total Allocated; timeline: row sum */
    uint64_t *reserved_bytes;       /* trace only, else NULL */
    uint64_t *category_bytes[OD_PCAT_COUNT]; /* timeline only, else NULL */
    int device;                     /* the GPU the trace's timeline is for (-1 unknown) */

    size_t peak_index;              /* first point at the peak */
    uint64_t peak_allocated_bytes;
    double peak_time_us;            /* from origin_us */
    uint64_t peak_reserved_bytes;   /* max over the trace (trace only) */
    uint64_t peak_category_bytes[OD_PCAT_COUNT]; /* timeline: composition at the peak */
    od_phase peak_phase;            /* trace: phase at the peak (OTHER when unmarked) */

    od_profile_span *spans;         /* trace: phases over time */
    size_t n_spans;
    size_t n_steps;                 /* optimizer steps: stretches of Optimizer.step# */
    od_profile_step *steps;         /* one per optimizer step, in order */

    /* Trace attribution. */
    size_t n_memory_events, n_ops, n_frames;
    int with_stack;                 /* Python frames present */
    od_profile_ranking ops_at_peak;     /* live bytes at the peak by innermost operator */
    od_profile_ranking sources_at_peak; /* ... by innermost Python frame outside libraries
                                           (else the innermost library frame) */
    od_profile_ranking modules_at_peak; /* ... by innermost nn.Module scope */
    od_profile_ranking ops_self;        /* net bytes per operator over the trace: the
                                           figure key_averages() prints as Self CUDA Mem
                                           (table: that column, as printed) */
    uint64_t peak_tracked_bytes;    /* live at the peak from allocations inside the trace */
    uint64_t peak_untracked_bytes;  /* allocated before the trace started */

    /* JAX device memory profile. */
    uint64_t live_bytes, live_buffers;
    od_profile_ranking by_kind, by_device, by_source;

    od_profile_stats stats;
    od_profile_bfc bfc;
    int table_rounded;              /* table figures are rounded as printed */
} od_profile;

/* Guess the kind from the first bytes of the (decompressed) input; -1 when none fits.
 * For doctor and report, which look before they load. */
int od_profile_detect(const void *head, size_t len);

/* Read a profiler record from in (streamed; gzip handled by the input). Fails with
 * OD_ERR_FORMAT and the byte offset on a bad or truncated file, OD_ERR_LIMIT on absurd
 * sizes, OD_ERR_NOMEM. */
od_status od_profile_load(od_input *in, od_profile **out, od_error *err);
void od_profile_free(od_profile *p);

/* The profile as a memory series for trend analysis (trend.h): per optimizer step
 * (allocated after the step, reserved, the step's peak) when the trace marks steps,
 * otherwise allocated (and reserved) over time in seconds. Fails with OD_ERR_FORMAT when
 * the profile has no timeline (tables, pprof, stats, logs), OD_ERR_NOMEM. The caller
 * frees the series with od_series_free. */
od_status od_profile_to_series(const od_profile *p, od_series **out, od_error *err);

const char *od_profile_kind_name(od_profile_kind k);       /* "torch-trace", ... */
const char *od_profile_category_name(od_profile_category c); /* "parameter", ... */
const char *od_phase_name(od_phase p);                       /* "forward", ... */

#endif
