/* watchtrend.h - a memory series sampled live, kept in bounded memory, and its trend;
 * and what `watch` keeps of one GPU: its series, its processes', the projection of when
 * it fills up and the alarm before it does.
 *
 * This is `watch`'s own small classifier, for the verdict it prints at the end and for
 * --alarm / Prometheus while it runs; `trend` (lib/read/trend.h) is the full one for files.
 *
 * Bounded memory: a series holds at most `cap` points. When full it keeps every other
 * point and from then on only every second sample (then fourth, ...), so a day-long run
 * still covers its whole time span at a coarser step; the peak and the last sample are
 * tracked exactly whatever was dropped.
 *
 * Ownership: od_wseries_init allocates; the caller frees with od_wseries_free.
 * od_watch_init allocates likewise; the caller frees with od_watch_free. */
#ifndef OD_WATCHTREND_H
#define OD_WATCHTREND_H

#include "oomdoc/od.h"
#include "read/nvml.h"

typedef struct {
    double *t_s;        /* seconds since the watch started (monotonic clock) */
    uint64_t *bytes;
    size_t n, cap;
    size_t stride;      /* keep one sample in `stride` */
    size_t skipped;     /* samples the last slot stands for so far */
    uint64_t samples;   /* all samples ever added */
    uint64_t peak_bytes, last_bytes;
    double peak_t_s, last_t_s;
} od_wseries;

/* cap: at least 16 points. OD_ERR_ARG below that, OD_ERR_NOMEM. */
od_status od_wseries_init(od_wseries *s, size_t cap, od_error *err);
void od_wseries_free(od_wseries *s);
/* Add a sample. A time earlier than the last one (it cannot be, with a monotonic clock,
 * but a caller may pass wall time) is clamped to the last time. */
void od_wseries_add(od_wseries *s, double t_s, uint64_t bytes);

typedef enum {
    OD_WTREND_UNKNOWN = 0, /* too few samples to say */
    OD_WTREND_STABLE,
    OD_WTREND_LEAK,        /* steady growth in the current regime */
    OD_WTREND_SPIKE        /* a jump, or a peak well above where memory came back to */
} od_wtrend_verdict;

typedef struct {
    od_wtrend_verdict verdict;
    double growth_bytes_per_second; /* current regime (Theil-Sen slope) */
    double r2;                      /* of that line over the regime's points */
    double window_start_s;          /* where the current regime was taken from */
    double projected_oom_s;         /* seconds from the last sample to capacity; < 0: none */
} od_wtrend;

/* Classify. The idle start of a series (flat before the job allocates) is skipped, and
 * the slope is taken over the last third of the active time, so that warm-up (CUDA
 * context, model load, optimizer state in step 1) does not count as growth. A steady
 * climb that began later than that third (memory flat for minutes, then growing for the
 * last seconds) is a climb too: the latest regime - where a two-segment fit of the
 * active time breaks - is a leak when it is a clean line (r2 >= 0.9) rising by the same
 * amount a leak must, and then its slope and start are the ones reported.
 * capacity_bytes 0: no projection. Never fails. */
void od_wtrend_classify(const od_wseries *s, uint64_t capacity_bytes, od_wtrend *out);

/* "leak", "stable", "spike", "unknown". */
const char *od_wtrend_name(od_wtrend_verdict v);

/* ---- one watched GPU ---- */

#define OD_WATCH_SERIES_CAP 8192     /* device series: 8192 points x 16 B, whatever the run's length */
#define OD_WATCH_PROC_SERIES_CAP 512
#define OD_WATCH_MAX_PROCS 64        /* processes followed at once (more still count for pid) */
#define OD_WATCH_CLASSIFY_EVERY_S 0.25
/* The verdict watch reports leaves a verdict only once this many classifications in a
 * row say another (a leak, or anything after "unknown", is taken at once: an OOM on its
 * way is never held back): a fit at the edge of a threshold does not flip the live view,
 * the alarm or the Prometheus gauges between "leak" and "stable" at every refresh. */
#define OD_WATCH_HYSTERESIS 3

typedef struct {
    uint64_t capacity_bytes; /* what the projection counts against */
    double alarm_s;          /* alarm when the projected OOM is this close; 0: no alarm */
    double interval_s;       /* time between samples: at OD_WATCH_CLASSIFY_EVERY_S or more,
                                every sample is classified, else at most that often */
    int follow_pid;          /* follow pid's memory (summed over its listings) */
    uint32_t pid;
} od_watch_config;

/* A process on the GPU, from the first sample that lists it to the last. */
typedef struct {
    uint32_t pid;
    int seen;        /* listed at the latest sample */
    od_wseries s;    /* its memory as NVML attributes it */
    od_wtrend tr;    /* with od_watch's hysteresis; projected_oom_s: when the GPU is
                        full at this process's growth */
    od_wtrend_verdict pending;
    int pending_n;
} od_wproc;

typedef struct {
    od_watch_config cfg;
    od_wseries s;             /* the GPU's memory in use */
    od_wtrend tr;             /* the verdict reported: raw's once it held
                                 OD_WATCH_HYSTERESIS classifications; while a change is
                                 pending, a leak's projection is updated from its slope */
    od_wtrend raw;            /* the latest classification itself */
    od_wtrend_verdict pending; /* the verdict raw says, differing from tr's ... */
    int pending_n;            /* ... for this many classifications in a row */
    od_wproc procs[OD_WATCH_MAX_PROCS]; /* in order of first appearance */
    size_t n_procs;
    uint64_t pid_peak_bytes, pid_last_bytes; /* cfg.follow_pid */
    int alarm_active;         /* the projection is within cfg.alarm_s now */
    int alarm_raised;         /* it has been, at some time */
    double alarm_first_t_s;   /* when it first was (alarm_raised) */
    double classified_at_s;   /* time of the latest classification, -1 before any */
} od_watch;

/* Start watching with cfg (copied). Fails with OD_ERR_NOMEM (w is then empty: freeing
 * it is fine). */
od_status od_watch_init(od_watch *w, const od_watch_config *cfg, od_error *err);
void od_watch_free(od_watch *w);

/* One sample at t_s: the GPU's memory in use and the n processes NVML lists on it (a
 * PID listed twice, as MIG does, counts once, its bytes added up; a process no longer
 * listed leaves the table, its PID may come back as a new process). Classifies when due
 * (see od_watch_config.interval_s) and then checks the alarm. Returns 1 when the alarm
 * goes off at this sample, else 0. */
int od_watch_sample(od_watch *w, double t_s, uint64_t used_bytes, const od_nvml_process *procs, size_t n);

/* Classify the GPU and each process now: their trends (with the hysteresis above), and
 * each process's projection against what is left of the GPU. */
void od_watch_classify(od_watch *w);

/* Check the alarm against the latest classification: returns 1 when the projected OOM
 * has just come within cfg.alarm_s (it was not at the previous check), else 0. */
int od_watch_check_alarm(od_watch *w);

#endif
