/* diagnose.h - one diagnosis from everything the user has after an OOM: OOM reports and
 * memory_summary()/memory_stats()/nvidia-smi output (triage), per-step or NVML series
 * (trend), memory snapshots (summary, iterations, categorize).
 *
 * The verdict, the evidence behind it (each item a sentence plus its main figure), the
 * ranked "do now" mitigations and "long term" solutions, each with its expected effect,
 * and the command that verifies the fix. `oomdoc doctor` prints it; `oomdoc report`
 * renders it.
 *
 * od_diagnose reads the caller's inputs (never keeps pointers to them past the call,
 * except as noted) and returns a diagnosis the caller frees with od_diagnosis_free (NULL
 * is fine); everything inside belongs to the diagnosis. */
#ifndef OD_DIAGNOSE_H
#define OD_DIAGNOSE_H

#include "analyze/categorize.h"
#include "analyze/stepneed.h"
#include "analyze/summary.h"
#include "model/estimate.h"
#include "model/iterations.h"
#include "model/plan.h"
#include "model/pools.h"
#include "model/replay.h"
#include "oomdoc/od.h"
#include "oomdoc/snapshot.h"
#include "read/models.h"
#include "read/load.h"
#include "read/profile.h"
#include "read/trend.h"
#include "read/triage/triage.h"

typedef enum {
    OD_VERDICT_HEALTHY,
    OD_VERDICT_UNKNOWN,
    OD_VERDICT_CAPACITY,
    OD_VERDICT_FRAGMENTATION,
    OD_VERDICT_OTHER_PROCESSES,
    OD_VERDICT_CAP_LIMIT,
    OD_VERDICT_LEAK,
    OD_VERDICT_HOST_MEMORY,   /* CPU RAM, the OOM killer or shared memory ran out, not the GPU */
    OD_VERDICT_COUNT
} od_verdict;


/* One input as the caller parsed it. The diagnosis reads these during od_diagnose only. */
typedef struct {
    const char *name;             /* as shown in evidence ("<stdin>" for -) */
    od_input_kind kind;
    const od_triage *triage;      /* OD_INPUT_LOG */
    const od_series *series;      /* OD_INPUT_SERIES */
    const od_trend_fit *fit;      /* OD_INPUT_SERIES; NULL when too short for a trend */
    const od_snapshot *snapshot;  /* OD_INPUT_SNAPSHOT */
    const od_estimate *expected;  /* OD_INPUT_CONFIG: plan's estimate of the workload the
                                     snapshots ran (od_estimate_compute), or NULL */
    const od_profile *profile;    /* OD_INPUT_PROFILE; also an OD_INPUT_LOG that is a BFC
                                     allocator log (its chunk and Stats figures), or NULL */
} od_diag_input;

#define OD_NO_INPUT ((size_t)-1)

/* One piece of evidence: a sentence (sizes in IEC units) and its main figure. */
typedef struct {
    char text[720];
    size_t input;        /* index of the input it comes from, OD_NO_INPUT: several/none */
    const char *key;     /* stable name of the figure ("stranded_bytes", ...), or NULL */
    double value;        /* the figure: bytes, bytes per step, or a ratio, as key says */
} od_evidence;

/* How a remedy's effect was checked before it was advised. */
typedef enum {
    OD_CHECK_NONE,        /* no model applies: the text says it is unchecked */
    OD_CHECK_REPLAY,      /* the recorded trace re-run under the new setting or cap */
    OD_CHECK_PLAN,        /* the planner's estimate under the changed recipe */
    OD_CHECK_ARITHMETIC   /* exact sums from the inputs (bytes released, growth x steps) */
} od_check_method;

typedef struct {
    od_check_method method;
    int avoids_oom;                /* 1, 0, or -1: cannot tell (a lower bound, no OOM) */
    uint64_t predicted_peak_bytes; /* 0: none */
    uint64_t releases_bytes;       /* 0: none */
    char detail[400];
} od_check;

/* A mitigation or solution, what it is expected to do, how that was checked, and the
 * oomdoc command that shows it ("" when none). Ranked by position: a setting or cap the
 * check shows avoids the OOM, then the code fix for a found cause, then recipe changes
 * sized exactly, then sharding or a larger device; within each, the cheapest first. */
typedef struct {
    char action[480];
    char effect[480];
    char command[480];
    od_check check;
    int rank_class;                /* 1..4 as above; 5: general advice (unchecked) */
    double cost;                   /* within a class: compute or code cost, smaller first */
} od_remedy;

/* One allocator setting replayed on a snapshot's trace (replay.h) under the run's cap. */
typedef struct {
    char setting[80];              /* PYTORCH_CUDA_ALLOC_CONF text; "" = as the run had it */
    int oom;                       /* the model failed a request */
    size_t oom_entry;              /* trace index of the first failed request */
    uint64_t peak_reserved_bytes;
    uint64_t stranded_at_peak_bytes;
    int approximate;               /* the replay does not reproduce the run exactly (replay.h) */
    uint64_t oom_request_bytes, oom_allocated_bytes, oom_largest_free_bytes; /* at its OOM */
} od_whatif;

#define OD_MAX_WHATIFS 6

/* What a snapshot input showed, per device that has memory in it. */
typedef struct {
    size_t input;                      /* index into the inputs */
    int64_t device;
    od_verdict verdict;                /* this snapshot alone */
    const od_device_summary *figures;  /* segments, reserved, stranded, peak, OOMs */
    od_iterations *iterations;         /* NULL without a trace */
    od_categories *categories;         /* live memory at the peak by purpose; NULL without a trace */
    uint8_t *life_categories;          /* each lifetime's category (figures->trace->lives'
                                          order), by the rules that made categories */
    od_inference inference;            /* is_inference 0 for a training trace */
    /* The failing line vs what held the memory when it failed (the last OOM). */
    char oom_site[256];                /* the failing request's site */
    char held_site[2][256];            /* the two sites holding the most then */
    uint64_t held_bytes[2];
    od_step_need need;                 /* a first step that failed in its forward, as its
                                          trace extrapolates it (stepneed.h); need.have 0
                                          otherwise */
    /* Pools and streams (pools.h): CUDA-graph private pools eager code cannot use, and
     * cached memory of side streams the default stream cannot reuse. */
    size_t graph_pools;
    uint64_t graph_pool_segments, graph_pool_reserved_bytes, graph_pool_allocated_bytes;
    int64_t graph_pool_id[2];          /* the largest graph pool */
    size_t streams;
    uint64_t side_stream;              /* the side stream caching the most free bytes */
    uint64_t side_stream_free_bytes;
    uint64_t side_stream_graph_free_bytes; /* of it, in CUDA-graph pools' segments */
    /* A spike: one iteration peaking far above the others. */
    int have_spike;
    size_t spike_iteration;            /* index into iterations->items */
    uint64_t spike_peak_bytes, typical_peak_bytes; /* typical: the median of the others */
    char spike_sites[600];             /* sites whose allocation sizes grew in it */
    /* The OOM (last oom trace entry), as the pool stood at that moment. */
    int have_oom;
    uint64_t oom_request_bytes;        /* 512-rounded request */
    uint64_t oom_device_free_bytes;    /* device-wide; ignores any per-process cap */
    uint64_t oom_allocated_bytes;      /* live (requests rounded) when it failed */
    uint64_t oom_reserved_bytes;       /* from segment events; 0 when not traced */
    uint64_t max_reserved_bytes;       /* highest reserve seen in the trace */
    /* Expected (plan, from a config input's estimate) vs actual (categories) at the peak. */
    int have_expected;
    uint64_t expected_bytes[OD_CAT_COUNT]; /* plan's keys; workspace and unknown stay 0 */
    uint64_t expected_peak_bytes;
    int worst_category;                /* the category most above its expectation, or -1 */
    int64_t worst_excess_bytes;        /* actual - expected for it */
    /* Allocator what-ifs for an OOM, measured by replaying the trace (whatifs[0] is the
     * run's own setting: it must fail where the run failed for the others to count). */
    size_t n_whatifs;
    od_whatif whatifs[OD_MAX_WHATIFS];
    uint64_t whatif_cap_bytes;         /* the cap replayed under */
    const char *whatif_cap_source;     /* "the OOM message" or "the most ever reserved, a lower bound" */
    int whatif_reproduces;             /* whatifs[0] failed at the recorded OOM */
    uint64_t cap_bytes;                /* the run's cap as given or as its OOM message says, 0
                                          when neither does (then the verdict depends on it:) */
    const char *cap_source;            /* "as given", "the OOM message", or NULL */
    uint64_t frag_cap_bytes;           /* without a known cap, the OOM is fragmentation under
                                          any cap of at least this (live + the request) ... */
    uint64_t low_cap_bytes;            /* ... and the cap was at least this (the most reserved) */
    int whatif_unanswerable;           /* a wrapped trace: no setting's what-if is answerable */
} od_snapshot_findings;

typedef struct {
    od_verdict verdict;
    size_t decided_by;                 /* input index, OD_NO_INPUT when none decided */
    const od_oom_report *report;       /* the OOM report that decided it (points into that
                                          input's od_triage: valid while the caller keeps it) */
    od_evidence *evidence;
    size_t n_evidence;
    od_remedy *do_now;
    size_t n_do_now;
    od_remedy *long_term;
    size_t n_long_term;
    char verify[480];                  /* what to run and what to expect after the fix */
    char verify_command[480];          /* the oomdoc command in it (runnable), or "" */
    /* Leaks. */
    int have_growth_per_step;
    double growth_bytes_per_step;      /* per training step (snapshot: per iteration) */
    int have_growth_per_second;
    double growth_bytes_per_second;    /* NVML series */
    char site[512];                    /* "file:line:function" keeping memory alive, or "" */
    /* Snapshots, in input order. */
    od_snapshot_findings *snapshots;
    size_t n_snapshots;
    size_t highest_snapshot;           /* index into snapshots of the highest peak
                                          (peak allocated block bytes), when >1 */
    size_t lowest_snapshot;            /* and of the lowest: never the highest */
    double imbalance;                  /* (highest - lowest) / highest, when >1 */
    size_t first_oom_snapshot;         /* the first to fail by time, or SIZE_MAX */
    int have_message;                  /* an input carried an OOM report */
    uint64_t device_total_bytes;       /* the device's memory as the inputs or flags tell
                                          it, 0 when nothing does */
    const char *device_total_source;   /* "as given", "the OOM message", "nvidia-smi", or NULL */
    char device_name[64];              /* nvidia-smi's name of it, or "" */
    int have_workload;                 /* the plan the snapshots were compared with: */
    od_workload workload;              /* the caller's, as a generate() trace corrects it */
    od_summary **summaries;            /* owned: one per snapshot input (internal) */
    size_t *summary_input;             /* the input each summary is of */
    size_t n_summaries;
} od_diagnosis;

/* What the caller knows beyond the inputs (doctor's flags). Every field may be 0/NULL. */
typedef struct {
    uint64_t cap_bytes;            /* the run's per-process cap (--capacity, --fraction) */
    uint64_t device_total_bytes;   /* the device's memory as torch reports it (--gpu) */
    const od_model *model;         /* the workload (--config and plan flags), to size */
    const od_workload *workload;   /* recipe changes with the planner */
    const char *config_path;       /* the config's name, for printed commands */
    const char *torch_version;     /* --torch-version ("2.1.0"), or NULL: inferred */
    int task_given;                /* the workload's task is the caller's; else a generate()
                                      trace is compared with an inference plan */
    int new_tokens_given;          /* likewise its new tokens; else the decode steps seen */
} od_diag_options;

/* What the caller asks beyond its inputs: doctor's (and report's) flags. */
typedef struct {
    od_diag_options opts;          /* cap, device, torch version (model/workload: set below) */
    const od_workload *workload;   /* the plan flags; NULL: plan's defaults */
    int plan_flags;                /* 1: the caller gave plan flags (they need a config) */
    size_t config_input;           /* the input given as --config (it must be a config.json),
                                      OD_NO_INPUT when none */
} od_diag_request;

/* The diagnosis of loaded inputs (load.h; each one's name as shown) under a request: the
 * plan's estimate of the workload for each config.json when a snapshot is there to compare
 * it with, then od_diagnose_with. Fails with OD_ERR_ARG for a request the inputs cannot
 * serve (plan flags without a config.json, a workload the planner refuses) and
 * OD_ERR_FORMAT for a config.json the planner cannot read where it is needed, *bad_input
 * then naming that input (else OD_NO_INPUT); OD_ERR_NOMEM. */
od_status od_diagnose_loaded(const od_loaded *ins, size_t n, const od_diag_request *rq, od_diagnosis **out,
                             size_t *bad_input, od_error *err);

/* As od_diagnose, with the caller's options (NULL: none). */
od_status od_diagnose_with(const od_diag_input *inputs, size_t n, const od_diag_options *opts, od_diagnosis **out,
                           od_error *err);

/* Diagnose inputs[0..n). A leak (series or snapshot) outranks the OOM it ends in; then the
 * most recent OOM report; then a snapshot's own OOM; else healthy when there is data and
 * no OOM, unknown otherwise. Fails with OD_ERR_NOMEM, OD_ERR_LIMIT (absurd snapshot). */
od_status od_diagnose(const od_diag_input *inputs, size_t n, od_diagnosis **out, od_error *err);
void od_diagnosis_free(od_diagnosis *d);

/* The summary the diagnosis made of snapshot input `input`, or NULL (it stays d's). */
const od_summary *od_diagnosis_summary(const od_diagnosis *d, size_t input);
/* The findings of snapshot input `input` on `device`, or NULL. */
const od_snapshot_findings *od_diagnosis_findings(const od_diagnosis *d, size_t input, int64_t device);

/* "none", "replay", "plan", "arithmetic". */
const char *od_check_method_name(od_check_method m);

/* "healthy", "unknown", "capacity", ... and back (-1 when unknown). */
const char *od_verdict_name(od_verdict v);
int od_verdict_parse(const char *name);

/* One sentence giving an OOM report's verdict with its numbers (IEC units), into buf. */
void od_oom_reason(const od_oom_report *r, char *buf, size_t size);
/* How a report's request figure relates to the tensor, or NULL (a static string). */
const char *od_oom_request_note(const od_oom_report *r);

#endif
