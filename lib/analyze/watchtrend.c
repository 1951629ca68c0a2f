/* watchtrend.c - bounded live series and a robust trend for `watch`. */
#include "analyze/watchtrend.h"
#include "base/mem.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1024.0 * 1024.0)
/* Theil-Sen over at most this many points: 32640 pairs, well under a millisecond. */
#define TS_POINTS 256

od_status od_wseries_init(od_wseries *s, size_t cap, od_error *err)
{
    memset(s, 0, sizeof *s);
    if (cap < 16 || cap > ((size_t)1 << 28))
        return od_fail(err, OD_ERR_ARG, "series capacity %zu outside 16..2^28", cap);
    s->t_s = malloc(cap * sizeof *s->t_s);
    s->bytes = malloc(cap * sizeof *s->bytes);
    if (!s->t_s || !s->bytes) {
        od_wseries_free(s);
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    }
    s->cap = cap;
    s->stride = 1;
    return OD_OK;
}

void od_wseries_free(od_wseries *s)
{
    free(s->t_s);
    free(s->bytes);
    memset(s, 0, sizeof *s);
}

void od_wseries_add(od_wseries *s, double t_s, uint64_t bytes)
{
    if (!isfinite(t_s))
        t_s = s->last_t_s;
    if (s->samples && t_s < s->last_t_s)
        t_s = s->last_t_s;
    if (s->samples == 0 || bytes > s->peak_bytes) {
        s->peak_bytes = bytes;
        s->peak_t_s = t_s;
    }
    s->last_bytes = bytes;
    s->last_t_s = t_s;
    s->samples++;
    if (!s->cap)
        return;
    /* Each slot stands for `stride` consecutive samples and holds the newest of them,
     * so the series always ends at the latest sample. */
    if (s->n > 0 && s->skipped > 0 && s->skipped < s->stride) {
        s->t_s[s->n - 1] = t_s;
        s->bytes[s->n - 1] = bytes;
        s->skipped++;
        return;
    }
    if (s->n == s->cap) {
        size_t k = 0;
        for (size_t i = 0; i < s->n; i += 2, k++) {
            s->t_s[k] = s->t_s[i];
            s->bytes[k] = s->bytes[i];
        }
        s->n = k;
        s->stride *= 2;
    }
    s->skipped = 1;
    s->t_s[s->n] = t_s;
    s->bytes[s->n] = bytes;
    s->n++;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, size_t n)
{
    od_sort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

const char *od_wtrend_name(od_wtrend_verdict v)
{
    switch (v) {
    case OD_WTREND_STABLE: return "stable";
    case OD_WTREND_LEAK: return "leak";
    case OD_WTREND_SPIKE: return "spike";
    case OD_WTREND_UNKNOWN: break;
    }
    return "unknown";
}

/* Theil-Sen line over t[b..n), v[b..n): the median of pairwise slopes over an even
 * subsample of TS_POINTS, and the r2 of that line. 0 when out of memory. */
static int fit(const double *t, const uint64_t *v, size_t b, size_t n, double *slope_out, double *r2_out)
{
    size_t m = n - b;
    size_t k = m < TS_POINTS ? m : TS_POINTS;
    double pt[TS_POINTS], pv[TS_POINTS];
    for (size_t i = 0; i < k; i++) {
        size_t j = b + (k == 1 ? 0 : i * (m - 1) / (k - 1));
        pt[i] = t[j];
        pv[i] = (double)v[j];
    }
    double *sl = malloc(sizeof(double) * (k * (k - 1) / 2 + 1));
    double *res = malloc(sizeof(double) * (k + 1));
    if (!sl || !res) {
        free(sl);
        free(res);
        return 0;
    }
    size_t ns = 0;
    for (size_t i = 0; i < k; i++)
        for (size_t j = i + 1; j < k; j++)
            if (pt[j] > pt[i])
                sl[ns++] = (pv[j] - pv[i]) / (pt[j] - pt[i]);
    double slope = ns ? median(sl, ns) : 0;
    for (size_t i = 0; i < k; i++)
        res[i] = pv[i] - slope * pt[i];
    double icpt = median(res, k);
    double mean = 0;
    for (size_t i = 0; i < k; i++)
        mean += pv[i];
    mean /= (double)k;
    double sst = 0, sse = 0;
    for (size_t i = 0; i < k; i++) {
        double e = pv[i] - (icpt + slope * pt[i]);
        sse += e * e;
        sst += (pv[i] - mean) * (pv[i] - mean);
    }
    free(sl);
    free(res);
    *slope_out = slope;
    *r2_out = sst > 0 ? 1 - sse / sst : 1;
    return 1;
}

/* Squared error of the least-squares line through the points p[lo..hi) (centred sums:
 * the values are relative to the series' last, so large byte counts do not cancel). */
static double line_sse(const double *x, const double *y, size_t lo, size_t hi)
{
    size_t m = hi - lo;
    if (m < 3)
        return 0;
    double mx = 0, my = 0;
    for (size_t i = lo; i < hi; i++)
        mx += x[i], my += y[i];
    mx /= (double)m;
    my /= (double)m;
    double sxx = 0, sxy = 0, syy = 0;
    for (size_t i = lo; i < hi; i++) {
        double dx = x[i] - mx, dy = y[i] - my;
        sxx += dx * dx;
        sxy += dx * dy;
        syy += dy * dy;
    }
    double e = sxx > 0 ? syy - sxy * sxy / sxx : syy;
    return e > 0 ? e : 0;
}

#define REGIME_POINTS 256 /* the change point is searched on a subsample of this many */
#define REGIME_MIN 5      /* points the latest regime needs at least */

/* Where the latest regime of t[a..n) begins: the break of the two-line fit with the least
 * squared error, searched on an even subsample. Returns the index into t. */
static size_t latest_regime(const double *t, const uint64_t *v, size_t a, size_t n)
{
    size_t m = n - a, k = m < REGIME_POINTS ? m : REGIME_POINTS;
    double x[REGIME_POINTS], y[REGIME_POINTS];
    size_t at[REGIME_POINTS];
    for (size_t i = 0; i < k; i++) {
        at[i] = a + (k == 1 ? 0 : i * (m - 1) / (k - 1));
        x[i] = t[at[i]] - t[n - 1];
        y[i] = (double)v[at[i]] - (double)v[n - 1];
    }
    size_t best = 0;
    double best_e = line_sse(x, y, 0, k);
    for (size_t b = 2; b + REGIME_MIN <= k; b++) {
        double e = line_sse(x, y, 0, b) + line_sse(x, y, b, k);
        if (e < best_e) {
            best_e = e;
            best = b;
        }
    }
    return at[best];
}

/* A rise that makes a leak: at least 64 MiB or 2% of the level over the regime. */
static int leak_rise(double slope, double span_s, double level)
{
    return slope > 0 && slope * span_s >= fmax(64 * MIB, 0.02 * level);
}

void od_wtrend_classify(const od_wseries *s, uint64_t capacity_bytes, od_wtrend *out)
{
    memset(out, 0, sizeof *out);
    out->projected_oom_s = -1;
    size_t n = s->n;
    if (n < 8)
        return; /* unknown */
    const double *t = s->t_s;
    const uint64_t *v = s->bytes;
    uint64_t lo = v[0], hi = v[0];
    for (size_t i = 1; i < n; i++) {
        if (v[i] < lo) lo = v[i];
        if (v[i] > hi) hi = v[i];
    }
    /* Idle start: before the job allocates, the series sits at its first value. */
    double tol = fmax(4 * MIB, 0.01 * (double)(hi - lo));
    size_t a = 0;
    while (a < n && fabs((double)v[a] - (double)v[0]) <= tol)
        a++;
    out->verdict = OD_WTREND_STABLE;
    if (a == n) {
        out->window_start_s = t[0];
        out->r2 = 1;
        return; /* flat all along */
    }
    if (a > 0)
        a--; /* the last idle point anchors the rise */
    /* The current regime: the last third of the active time. */
    double w0 = t[a] + (t[n - 1] - t[a]) * (2.0 / 3.0);
    size_t b = a;
    while (b < n && t[b] < w0)
        b++;
    if (n - b < 5)
        b = n >= 5 ? n - 5 : 0;
    double slope, r2, level = (double)v[n - 1];
    if (!fit(t, v, b, n, &slope, &r2)) {
        out->verdict = OD_WTREND_UNKNOWN;
        return;
    }
    int leak = leak_rise(slope, t[n - 1] - t[b], level) && r2 >= 0.6;
    /* A climb that started after the last third began: its own regime. */
    if (!leak) {
        size_t c = latest_regime(t, v, a, n);
        double cs, cr2;
        if (c > b && n - c >= REGIME_MIN && fit(t, v, c, n, &cs, &cr2) && cr2 >= 0.9 &&
            leak_rise(cs, t[n - 1] - t[c], level)) {
            b = c;
            slope = cs;
            r2 = cr2;
            leak = 1;
        }
    }
    out->window_start_s = t[b];
    out->growth_bytes_per_second = slope;
    out->r2 = r2;
    if (leak) {
        out->verdict = OD_WTREND_LEAK;
        if (capacity_bytes > s->last_bytes)
            out->projected_oom_s = (double)(capacity_bytes - s->last_bytes) / slope;
        else if (capacity_bytes)
            out->projected_oom_s = 0;
        return;
    }
    /* A spike: memory went well above where it is now (the caching allocator keeps what it
     * reserved, so a fall seen by NVML means a process freed or ended), or a jump that
     * no line explains. */
    double rise = slope * (t[n - 1] - t[b]);
    double fall = (double)s->peak_bytes - (double)s->last_bytes;
    if (fall >= fmax(256 * MIB, 0.10 * (double)s->peak_bytes) ||
        (rise >= fmax(64 * MIB, 0.02 * level) && r2 < 0.6))
        out->verdict = OD_WTREND_SPIKE;
}

/* ---- one watched GPU ---- */

od_status od_watch_init(od_watch *w, const od_watch_config *cfg, od_error *err)
{
    memset(w, 0, sizeof *w);
    w->cfg = *cfg;
    w->classified_at_s = -1;
    return od_wseries_init(&w->s, OD_WATCH_SERIES_CAP, err);
}

void od_watch_free(od_watch *w)
{
    for (size_t i = 0; i < w->n_procs; i++)
        od_wseries_free(&w->procs[i].s);
    w->n_procs = 0;
    od_wseries_free(&w->s);
}

/* The processes of one sample: each one's series, the followed PID's bytes, and the
 * table without those that ended. */
static void track_processes(od_watch *w, double t_s, const od_nvml_process *ps, size_t n)
{
    for (size_t i = 0; i < w->n_procs; i++)
        w->procs[i].seen = 0;
    uint64_t pid_bytes = 0;
    for (size_t k = 0; k < n; k++) {
        uint64_t b = ps[k].used_bytes == OD_NVML_BYTES_UNKNOWN ? 0 : ps[k].used_bytes;
        if (w->cfg.follow_pid && ps[k].pid == w->cfg.pid)
            pid_bytes += b;
        od_wproc *p = NULL;
        for (size_t i = 0; i < w->n_procs; i++)
            if (w->procs[i].pid == ps[k].pid)
                p = &w->procs[i];
        if (!p && w->n_procs < OD_WATCH_MAX_PROCS) {
            p = &w->procs[w->n_procs];
            memset(p, 0, sizeof *p);
            if (od_wseries_init(&p->s, OD_WATCH_PROC_SERIES_CAP, NULL) != OD_OK)
                continue;
            p->pid = ps[k].pid;
            w->n_procs++;
        }
        if (!p)
            continue;
        if (p->seen) { /* the same PID listed twice (MIG): add up */
            p->s.last_bytes += b;
            continue;
        }
        p->seen = 1;
        od_wseries_add(&p->s, t_s, b);
    }
    /* A process that ended leaves the table: its PID may be reused. */
    size_t j = 0;
    for (size_t i = 0; i < w->n_procs; i++) {
        if (w->procs[i].seen)
            w->procs[j++] = w->procs[i];
        else
            od_wseries_free(&w->procs[i].s);
    }
    w->n_procs = j;
    if (w->cfg.follow_pid) {
        w->pid_last_bytes = pid_bytes;
        if (pid_bytes > w->pid_peak_bytes)
            w->pid_peak_bytes = pid_bytes;
    }
}

/* Take raw into the reported *tr: at once when it agrees, from unknown, or when it says
 * leak (an OOM on its way is shown as soon as the fit says so); any other change once it
 * has said the same new verdict OD_WATCH_HYSTERESIS times in a row. Until then the old
 * verdict stays, and a leak's projection follows the memory in use at the leak's slope. */
static void settle(od_wtrend *tr, const od_wtrend *raw, od_wtrend_verdict *pending, int *pending_n,
                   uint64_t capacity_bytes, uint64_t last_bytes)
{
    if (tr->verdict == OD_WTREND_UNKNOWN || raw->verdict == tr->verdict || raw->verdict == OD_WTREND_LEAK) {
        *tr = *raw;
        *pending_n = 0;
        return;
    }
    if (*pending_n && *pending == raw->verdict)
        (*pending_n)++;
    else
        *pending = raw->verdict, *pending_n = 1;
    if (*pending_n >= OD_WATCH_HYSTERESIS) {
        *tr = *raw;
        *pending_n = 0;
        return;
    }
    if (tr->verdict == OD_WTREND_LEAK && tr->growth_bytes_per_second > 0 && capacity_bytes)
        tr->projected_oom_s = capacity_bytes > last_bytes
                                  ? (double)(capacity_bytes - last_bytes) / tr->growth_bytes_per_second : 0;
}

void od_watch_classify(od_watch *w)
{
    od_wtrend_classify(&w->s, w->cfg.capacity_bytes, &w->raw);
    settle(&w->tr, &w->raw, &w->pending, &w->pending_n, w->cfg.capacity_bytes, w->s.last_bytes);
    for (size_t i = 0; i < w->n_procs; i++) {
        od_wproc *p = &w->procs[i];
        od_wtrend raw;
        od_wtrend_classify(&p->s, 0, &raw);
        settle(&p->tr, &raw, &p->pending, &p->pending_n, 0, 0);
        /* A process's growth fills the device's remaining memory. */
        p->tr.projected_oom_s = -1;
        if (p->tr.verdict == OD_WTREND_LEAK && p->tr.growth_bytes_per_second > 0 &&
            w->cfg.capacity_bytes > w->s.last_bytes)
            p->tr.projected_oom_s = (double)(w->cfg.capacity_bytes - w->s.last_bytes) /
                                    p->tr.growth_bytes_per_second;
    }
}

int od_watch_check_alarm(od_watch *w)
{
    if (w->cfg.alarm_s <= 0)
        return 0;
    int now = w->tr.verdict == OD_WTREND_LEAK && w->tr.projected_oom_s >= 0 &&
              w->tr.projected_oom_s <= w->cfg.alarm_s;
    int fires = now && !w->alarm_active;
    if (fires) {
        if (!w->alarm_raised)
            w->alarm_first_t_s = w->s.last_t_s;
        w->alarm_raised = 1;
    }
    w->alarm_active = now;
    return fires;
}

int od_watch_sample(od_watch *w, double t_s, uint64_t used_bytes, const od_nvml_process *procs, size_t n)
{
    od_wseries_add(&w->s, t_s, used_bytes);
    track_processes(w, t_s, procs, n);
    if (t_s - w->classified_at_s < OD_WATCH_CLASSIFY_EVERY_S && w->cfg.interval_s < OD_WATCH_CLASSIFY_EVERY_S)
        return 0;
    od_watch_classify(w);
    w->classified_at_s = t_s;
    return od_watch_check_alarm(w);
}
