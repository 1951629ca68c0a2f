/* watchtrend.h - a memory series sampled live, kept in bounded memory, and its trend.
 *
 * This is `watch`'s own small classifier, for the verdict it prints at the end and for
 * --alarm / Prometheus while it runs; `trend` (lib/trend.h) is the full one for files.
 *
 * Bounded memory: a series holds at most `cap` points. When full it keeps every other
 * point and from then on only every second sample (then fourth, ...), so a day-long run
 * still covers its whole time span at a coarser step; the peak and the last sample are
 * tracked exactly whatever was dropped.
 *
 * Ownership: od_wseries_init allocates; the caller frees with od_wseries_free. */
#ifndef OD_WATCHTREND_H
#define OD_WATCHTREND_H

#include "od.h"

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
 * context, model load, optimizer state in step 1) does not count as growth.
 * capacity_bytes 0: no projection. Never fails. */
void od_wtrend_classify(const od_wseries *s, uint64_t capacity_bytes, od_wtrend *out);

/* "leak", "stable", "spike", "unknown". */
const char *od_wtrend_name(od_wtrend_verdict v);

#endif
