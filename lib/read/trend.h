/* trend.h - memory over time: per-step training logs and NVML samples, and whether they
 * show a leak, a stable footprint, a warm-up still in progress, or a spike.
 *
 * Inputs (od_series_parse): CSV with a header, JSON Lines, or a JSON array of objects,
 * with a `step` column (also `iter`, `iteration`, `global_step`) or a time column
 * (`time_s`, `time`, `t`, `timestamp`: seconds) and any of `allocated`, `reserved`,
 * `used`, `peak` (also `memory_allocated`, `max_memory_allocated`, ...), optionally with
 * a unit suffix: `_bytes` or none (bytes), `_kib`/`_mib`/`_gib` (1024-based),
 * `_kb`/`_mb`/`_gb` (1000-based). A step column wins over a time column.
 *
 * od_series_parse returns a series the caller frees with od_series_free (NULL is fine).
 * od_trend_analyze fills a caller-owned od_trend_fit; nothing to free. */
#ifndef OD_TREND_H
#define OD_TREND_H

#include "oomdoc/od.h"

typedef enum {
    OD_METRIC_ALLOCATED,
    OD_METRIC_USED,
    OD_METRIC_RESERVED,
    OD_METRIC_PEAK,
    OD_METRIC_COUNT
} od_metric;

typedef struct {
    int time_indexed;            /* x is seconds (time column) rather than steps */
    size_t n;                    /* rows, sorted by x */
    double *x;
    double *y[OD_METRIC_COUNT];  /* bytes per row; NULL where the column is absent */
} od_series;

/* Parse text[0..len) (od_series_parser fed once). Fails at the first problem: with
 * OD_ERR_FORMAT (byte offset of the offending field or line) on a missing header column, a
 * non-number, a negative or absurd value, a NUL byte (binary data); OD_ERR_LIMIT beyond
 * 50 million rows or on a run of OD_LINE_MAX_BYTES without a line break (lines.h);
 * OD_ERR_NOMEM. */
od_status od_series_parse(const char *text, size_t len, od_series **out, od_error *err);
void od_series_free(od_series *s);

/* The same parse, fed in chunks of any size: a row costs its numbers (8 bytes for x and
 * for each memory column), never its text; a JSON array (rare: logs are JSON Lines) is
 * kept as text until od_series_finish parses it. od_series_parser_new returns a parser
 * the caller frees with od_series_parser_free (NULL is fine). */
typedef struct od_series_parser od_series_parser;
od_status od_series_parser_new(od_series_parser **out, od_error *err);
/* Feed the next n bytes. OD_OK while the input may still be a series; any other status
 * is the parse's outcome (err filled): feeding more changes nothing. */
od_status od_series_feed(od_series_parser *p, const void *data, size_t n, od_error *err);
/* End of input: *out receives the series (the caller frees it with od_series_free), or
 * the status of the first problem as od_series_parse reports it (err may be NULL). */
od_status od_series_finish(od_series_parser *p, od_series **out, od_error *err);
void od_series_parser_free(od_series_parser *p);

typedef enum { OD_TREND_STABLE, OD_TREND_LEAK, OD_TREND_WARMING_UP, OD_TREND_SPIKE } od_trend_verdict;

typedef struct {
    od_metric metric;
    od_trend_verdict verdict;
    size_t n_points;
    size_t warmup_points;   /* leading points left out of the fit (idle start, warm-up) */
    double growth_per_x;    /* bytes per step, or per second for a time series */
    double intercept;       /* fitted bytes at x = 0 */
    double r2;              /* fit quality over the fitted points (1 for a perfect flat line) */
    double first_bytes, last_bytes, max_bytes, baseline_bytes; /* baseline: median of the fit window */
    double x_first, x_last; /* the fitted window */
    double spike_x, spike_bytes; /* the largest excursion above the fit (spike verdict) */
    int have_projection;
    double projected_oom;   /* step at which capacity is reached, or seconds after the last sample */
} od_trend_fit;

/* Fit metric m of s: robust (Theil-Sen) slope over the points after the warm-up, its r2,
 * the verdict, and when capacity_bytes > 0 and memory grows, when it reaches capacity.
 * Fails with OD_ERR_ARG if the metric is absent, OD_ERR_FORMAT with fewer than 3 points,
 * OD_ERR_NOMEM. */
od_status od_trend_analyze(const od_series *s, od_metric m, uint64_t capacity_bytes,
                           od_trend_fit *out, od_error *err);

/* The metric to judge by: allocated, else used, else reserved, else peak. */
od_metric od_series_primary(const od_series *s);

const char *od_metric_name(od_metric m);        /* "allocated_bytes", ... */
const char *od_trend_verdict_name(od_trend_verdict v); /* "leak", "stable", ... */

#endif
