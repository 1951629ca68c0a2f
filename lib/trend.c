/* trend.c - parse memory series and judge their trend.
 *
 * The fit is Theil-Sen (median of pairwise slopes): one long step or an OOM spike barely
 * moves it, where least squares would be dragged along. Warm-up is left out because
 * step 1 legitimately grows memory (PyTorch optimizers create their state lazily in the
 * first optimizer.step()), and an NVML series usually starts with an idle GPU. */
#include "trend.h"

#include <ctype.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mem.h"

#define MAX_ROWS 50000000u
#define MiB (1024.0 * 1024.0)
#define MAX_BINS 400

const char *od_metric_name(od_metric m)
{
    static const char *const n[] = {"allocated_bytes", "used_bytes", "reserved_bytes", "peak_bytes"};
    return m < OD_METRIC_COUNT ? n[m] : "?";
}

const char *od_trend_verdict_name(od_trend_verdict v)
{
    switch (v) {
    case OD_TREND_STABLE: return "stable";
    case OD_TREND_LEAK: return "leak";
    case OD_TREND_WARMING_UP: return "warming_up";
    case OD_TREND_SPIKE: return "spike";
    }
    return "?";
}

/* ---------- columns ---------- */

enum { COL_IGNORE = -1, COL_STEP = -2, COL_TIME = -3 };

typedef struct {
    int kind;     /* COL_* or an od_metric */
    double mult;  /* unit of the column's values */
} column;

static int name_in(const char *s, const char *const *list)
{
    for (; *list; list++)
        if (strcmp(s, *list) == 0)
            return 1;
    return 0;
}

/* Classify a column name (already lower-cased and trimmed). */
static column classify(const char *raw)
{
    static const char *const steps[] = {"step", "steps", "iter", "iteration", "global_step", "it", NULL};
    static const char *const times[] = {"time_s", "time", "t", "timestamp", "seconds", "elapsed_s", "time_sec", NULL};
    static const char *const alloc[] = {"allocated", "memory_allocated", "mem_allocated", "alloc", NULL};
    static const char *const used[] = {"used", "memory_used", "mem_used", "gpu_used", "nvml_used", NULL};
    static const char *const resv[] = {"reserved", "memory_reserved", "mem_reserved", NULL};
    static const char *const peak[] = {"peak", "max_allocated", "max_memory_allocated", "peak_allocated", "memory_peak", NULL};
    static const struct { const char *suf; double mult; } sufs[] = {
        {"_bytes", 1}, {"_kib", 1024.0}, {"_mib", 1048576.0}, {"_gib", 1073741824.0},
        {"_kb", 1e3}, {"_mb", 1e6}, {"_gb", 1e9}, {"_b", 1},
    };
    column c = {COL_IGNORE, 1};
    if (name_in(raw, steps)) {
        c.kind = COL_STEP;
        return c;
    }
    if (name_in(raw, times)) {
        c.kind = COL_TIME;
        return c;
    }
    char s[64];
    size_t n = strlen(raw);
    if (n >= sizeof s)
        return c;
    memcpy(s, raw, n + 1);
    for (size_t i = 0; i < sizeof sufs / sizeof sufs[0]; i++) {
        size_t l = strlen(sufs[i].suf);
        if (n > l && strcmp(s + n - l, sufs[i].suf) == 0) {
            s[n - l] = '\0';
            c.mult = sufs[i].mult;
            break;
        }
    }
    if (name_in(s, alloc)) c.kind = OD_METRIC_ALLOCATED;
    else if (name_in(s, used)) c.kind = OD_METRIC_USED;
    else if (name_in(s, resv)) c.kind = OD_METRIC_RESERVED;
    else if (name_in(s, peak)) c.kind = OD_METRIC_PEAK;
    return c;
}

/* ---------- rows ---------- */

typedef struct {
    double x;
    double y[OD_METRIC_COUNT];
    size_t order;
} row;

typedef struct {
    row *rows;
    size_t n, cap;
    int have_metric[OD_METRIC_COUNT];
    int have_step, have_time;
} table;

static row *add_row(table *t)
{
    if (!od_grow((void **)&t->rows, &t->cap, t->n + 1, sizeof *t->rows))
        return NULL;
    row *r = &t->rows[t->n];
    r->x = NAN;
    for (int m = 0; m < OD_METRIC_COUNT; m++)
        r->y[m] = NAN;
    r->order = t->n++;
    return r;
}

/* Store value v of column c into row r; step beats time as the x axis. */
static int store(row *r, column c, double v, double *time_tmp)
{
    if (c.kind == COL_STEP) {
        r->x = v;
    } else if (c.kind == COL_TIME) {
        *time_tmp = v;
    } else if (c.kind >= 0) {
        double b = v * c.mult;
        if (!(b >= 0) || b > 9.2e18)
            return 0;
        r->y[c.kind] = b;
    }
    return 1;
}

static void lower_trim(const char *p, const char *e, char *out, size_t size)
{
    while (p < e && (isspace((unsigned char)*p) || *p == '"' || *p == '\''))
        p++;
    while (e > p && (isspace((unsigned char)e[-1]) || e[-1] == '"' || e[-1] == '\''))
        e--;
    size_t n = 0;
    for (; p < e && n + 1 < size; p++)
        out[n++] = (char)tolower((unsigned char)*p);
    out[n] = '\0';
}

static od_status parse_csv(const char *text, size_t len, table *t, od_error *err)
{
    const char *end = text + len, *p = text;
    while (p < end && (*p == '\n' || *p == '\r'))
        p++;
    const char *he = memchr(p, '\n', (size_t)(end - p));
    if (!he)
        he = end;
    char sep = memchr(p, ',', (size_t)(he - p)) ? ',' : memchr(p, '\t', (size_t)(he - p)) ? '\t' : ';';
    column cols[64];
    int ncol = 0;
    for (const char *f = p; f <= he && ncol < 64;) {
        const char *fe = memchr(f, sep, (size_t)(he - f));
        if (!fe)
            fe = he;
        char name[64];
        lower_trim(f, fe, name, sizeof name);
        cols[ncol] = classify(name);
        if (cols[ncol].kind == COL_STEP) t->have_step = 1;
        if (cols[ncol].kind == COL_TIME) t->have_time = 1;
        if (cols[ncol].kind >= 0) t->have_metric[cols[ncol].kind] = 1;
        ncol++;
        f = fe + 1;
    }
    int any = 0;
    for (int m = 0; m < OD_METRIC_COUNT; m++)
        any |= t->have_metric[m];
    if (!(t->have_step || t->have_time) || !any)
        return od_fail_at(err, OD_ERR_FORMAT, (uint64_t)(p - text),
                          "expected a header with a step or time_s column and a memory column "
                          "(allocated, reserved, used or peak, optionally with _bytes)");
    p = he < end ? he + 1 : end;
    while (p < end) {
        const char *le = memchr(p, '\n', (size_t)(end - p));
        if (!le)
            le = end;
        const char *q = p;
        while (q < le && isspace((unsigned char)*q))
            q++;
        if (q == le || *q == '#') {
            p = le < end ? le + 1 : end;
            continue;
        }
        if (t->n >= MAX_ROWS)
            return od_fail_at(err, OD_ERR_LIMIT, (uint64_t)(p - text), "more than %u rows", MAX_ROWS);
        row *r = add_row(t);
        if (!r)
            return od_fail(err, OD_ERR_NOMEM, "out of memory");
        double tm = NAN;
        int i = 0;
        for (const char *f = p; f <= le && i < ncol; i++) {
            const char *fe = memchr(f, sep, (size_t)(le - f));
            if (!fe)
                fe = le;
            char num[64];
            lower_trim(f, fe, num, sizeof num);
            if (cols[i].kind != COL_IGNORE && num[0]) {
                char *ne;
                double v = strtod(num, &ne);
                if (*ne || !isfinite(v) || (cols[i].kind >= 0 && v < 0) || fe - f > 60 ||
                    !store(r, cols[i], v, &tm))
                    return od_fail_at(err, OD_ERR_FORMAT, (uint64_t)(f - text),
                                      "expected a non-negative number in column %d", i + 1);
            } else if (cols[i].kind == COL_STEP || (cols[i].kind == COL_TIME && !t->have_step)) {
                return od_fail_at(err, OD_ERR_FORMAT, (uint64_t)(f - text),
                                  "expected a %s value in column %d", cols[i].kind == COL_STEP ? "step" : "time", i + 1);
            }
            f = fe + 1;
        }
        if (!t->have_step)
            r->x = tm;
        if (isnan(r->x))
            return od_fail_at(err, OD_ERR_FORMAT, (uint64_t)(p - text), "row without a step or time value");
        p = le < end ? le + 1 : end;
    }
    return OD_OK;
}

static od_status row_from_json(json_t *o, table *t, uint64_t off, int first, od_error *err)
{
    if (!json_is_object(o))
        return od_fail_at(err, OD_ERR_FORMAT, off, "expected a JSON object per row");
    if (t->n >= MAX_ROWS)
        return od_fail_at(err, OD_ERR_LIMIT, off, "more than %u rows", MAX_ROWS);
    row *r = add_row(t);
    if (!r)
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    const char *k;
    json_t *v;
    double tm = NAN, step = NAN;
    json_object_foreach(o, k, v) {
        char name[64];
        lower_trim(k, k + strlen(k), name, sizeof name);
        column c = classify(name);
        if (c.kind == COL_IGNORE || json_is_null(v))
            continue;
        if (!json_is_number(v))
            return od_fail_at(err, OD_ERR_FORMAT, off, "expected a number for \"%.40s\"", k);
        double x = json_number_value(v);
        if (!isfinite(x) || (c.kind >= 0 && x < 0))
            return od_fail_at(err, OD_ERR_FORMAT, off, "expected a non-negative number for \"%.40s\"", k);
        if (c.kind == COL_STEP) {
            step = x;
            t->have_step = 1;
        } else if (c.kind == COL_TIME) {
            tm = x;
            t->have_time = 1;
        } else {
            if (!store(r, c, x, &tm))
                return od_fail_at(err, OD_ERR_FORMAT, off, "absurd value for \"%.40s\"", k);
            t->have_metric[c.kind] = 1;
        }
    }
    (void)first;
    r->x = !isnan(step) ? step : tm;
    if (isnan(r->x))
        return od_fail_at(err, OD_ERR_FORMAT, off, "row without a step or time_s value");
    return OD_OK;
}

static od_status parse_json(const char *text, size_t len, table *t, od_error *err)
{
    const char *end = text + len, *p = text;
    while (p < end && isspace((unsigned char)*p))
        p++;
    json_error_t je;
    if (*p == '[') {
        json_t *root = json_loadb(text, len, 0, &je);
        if (!root)
            return od_fail_at(err, OD_ERR_FORMAT, (uint64_t)je.position, "invalid JSON: %s", je.text);
        size_t i;
        json_t *v;
        od_status st = OD_OK;
        json_array_foreach(root, i, v) {
            if ((st = row_from_json(v, t, (uint64_t)(p - text), i == 0, err)) != OD_OK)
                break;
        }
        json_decref(root);
        return st;
    }
    while (p < end) {
        const char *le = memchr(p, '\n', (size_t)(end - p));
        if (!le)
            le = end;
        const char *q = p;
        while (q < le && isspace((unsigned char)*q))
            q++;
        if (q < le) {
            json_t *o = json_loadb(q, (size_t)(le - q), 0, &je);
            if (!o)
                return od_fail_at(err, OD_ERR_FORMAT, (uint64_t)(q - text) + (uint64_t)je.position,
                                  "invalid JSON line: %s", je.text);
            od_status st = row_from_json(o, t, (uint64_t)(q - text), t->n == 0, err);
            json_decref(o);
            if (st != OD_OK)
                return st;
        }
        p = le < end ? le + 1 : end;
    }
    return OD_OK;
}

static int cmp_row(const void *a, const void *b)
{
    const row *x = a, *y = b;
    if (x->x != y->x)
        return x->x < y->x ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

od_status od_series_parse(const char *text, size_t len, od_series **out, od_error *err)
{
    *out = NULL;
    table t;
    memset(&t, 0, sizeof t);
    const char *p = text, *end = text + len;
    while (p < end && isspace((unsigned char)*p))
        p++;
    if (p == end)
        return od_fail_at(err, OD_ERR_FORMAT, 0, "empty input: expected a CSV header or JSON rows");
    if (memchr(text, '\0', len))
        return od_fail_at(err, OD_ERR_FORMAT, (uint64_t)((const char *)memchr(text, '\0', len) - text),
                          "binary data: expected CSV or JSON text");
    od_status st = (*p == '{' || *p == '[') ? parse_json(text, len, &t, err) : parse_csv(text, len, &t, err);
    if (st != OD_OK) {
        free(t.rows);
        return st;
    }
    int any = 0;
    for (int m = 0; m < OD_METRIC_COUNT; m++)
        any |= t.have_metric[m];
    if (!any) {
        free(t.rows);
        return od_fail_at(err, OD_ERR_FORMAT, 0,
                          "expected a memory column (allocated, reserved, used or peak, optionally with _bytes)");
    }
    if (t.n > 1) /* a header-only series has no rows, and qsort(NULL, 0) is undefined */
        qsort(t.rows, t.n, sizeof *t.rows, cmp_row);
    od_series *s = calloc(1, sizeof *s);
    if (!s) {
        free(t.rows);
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    }
    s->time_indexed = !t.have_step;
    s->n = t.n;
    int ok = (s->x = malloc((t.n + 1) * sizeof *s->x)) != NULL;
    for (int m = 0; m < OD_METRIC_COUNT && ok; m++)
        if (t.have_metric[m])
            ok = (s->y[m] = malloc((t.n + 1) * sizeof *s->y[m])) != NULL;
    if (!ok) {
        free(t.rows);
        od_series_free(s);
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < t.n; i++) {
        s->x[i] = t.rows[i].x;
        for (int m = 0; m < OD_METRIC_COUNT; m++)
            if (s->y[m])
                s->y[m][i] = t.rows[i].y[m];
    }
    free(t.rows);
    *out = s;
    return OD_OK;
}

void od_series_free(od_series *s)
{
    if (!s)
        return;
    free(s->x);
    for (int m = 0; m < OD_METRIC_COUNT; m++)
        free(s->y[m]);
    free(s);
}

od_metric od_series_primary(const od_series *s)
{
    static const od_metric pref[] = {OD_METRIC_ALLOCATED, OD_METRIC_USED, OD_METRIC_RESERVED, OD_METRIC_PEAK};
    for (size_t i = 0; i < 4; i++)
        if (s->y[pref[i]])
            return pref[i];
    return OD_METRIC_ALLOCATED;
}

/* ---------- the fit ---------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median of v[0..n) (reorders v). */
static double median(double *v, size_t n)
{
    if (n == 0)
        return 0;
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Theil-Sen slope of (x, y)[0..n), on at most MAX_BINS equal-count bins so that long
 * NVML series stay O(bins^2). scratch holds MAX_BINS * (MAX_BINS - 1) / 2 + 2 * MAX_BINS. */
static double theil_sen(const double *x, const double *y, size_t n, double *scratch)
{
    size_t nb = n < MAX_BINS ? n : MAX_BINS;
    double *bx = scratch, *by = scratch + MAX_BINS, *sl = scratch + 2 * MAX_BINS;
    for (size_t b = 0; b < nb; b++) {
        size_t lo = b * n / nb, hi = (b + 1) * n / nb;
        double sx = 0, sy = 0;
        for (size_t i = lo; i < hi; i++) {
            sx += x[i];
            sy += y[i];
        }
        bx[b] = sx / (double)(hi - lo);
        by[b] = sy / (double)(hi - lo);
    }
    size_t k = 0;
    for (size_t i = 0; i < nb; i++)
        for (size_t j = i + 1; j < nb; j++)
            if (bx[j] > bx[i])
                sl[k++] = (by[j] - by[i]) / (bx[j] - bx[i]);
    return median(sl, k);
}

od_status od_trend_analyze(const od_series *s, od_metric m, uint64_t capacity_bytes,
                           od_trend_fit *out, od_error *err)
{
    memset(out, 0, sizeof *out);
    out->metric = m;
    if (m >= OD_METRIC_COUNT || !s->y[m])
        return od_fail(err, OD_ERR_ARG, "the input has no %s column", od_metric_name(m));
    size_t n = 0;
    double *x = malloc((s->n + 1) * sizeof *x), *y = malloc((s->n + 1) * sizeof *y);
    double *tmp = malloc((s->n + 1) * sizeof *tmp);
    double *scratch = malloc(((size_t)MAX_BINS * (MAX_BINS - 1) / 2 + 2 * MAX_BINS) * sizeof *scratch);
    if (!x || !y || !tmp || !scratch) {
        free(x), free(y), free(tmp), free(scratch);
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < s->n; i++)
        if (!isnan(s->y[m][i])) {
            x[n] = s->x[i];
            y[n++] = s->y[m][i];
        }
    od_status st = OD_OK;
    if (n < 3) {
        st = od_fail(err, OD_ERR_FORMAT, "%zu %s values: a trend needs at least 3", n, od_metric_name(m));
        goto done;
    }
    out->n_points = n;
    double lo = y[0], hi = y[0];
    for (size_t i = 0; i < n; i++) {
        lo = y[i] < lo ? y[i] : lo;
        hi = y[i] > hi ? y[i] : hi;
    }
    out->max_bytes = hi;

    /* Warm-up. A time series: skip the idle start (a plateau at the first value), then a
     * tenth of what follows. A step log: a tenth, at least the first step. */
    size_t warm;
    if (s->time_indexed) {
        double tol = fmax(0.02 * (hi - lo), 16 * MiB);
        size_t k = 0;
        while (k < n && y[k] <= y[0] + tol)
            k++;
        if (k == n)
            k = 0;
        warm = k + (n - k) / 10;
    } else {
        warm = n / 10 > 1 ? n / 10 : 1;
    }
    if (n - warm < 3)
        warm = n - 3;
    out->warmup_points = warm;
    const double *wx = x + warm, *wy = y + warm;
    size_t wn = n - warm;
    out->x_first = wx[0];
    out->x_last = wx[wn - 1];
    out->first_bytes = wy[0];
    out->last_bytes = wy[wn - 1];

    double slope = theil_sen(wx, wy, wn, scratch);
    for (size_t i = 0; i < wn; i++)
        tmp[i] = wy[i] - slope * wx[i];
    double icpt = median(tmp, wn);
    double mean = 0, ss_tot = 0, ss_res = 0;
    for (size_t i = 0; i < wn; i++)
        mean += wy[i];
    mean /= (double)wn;
    for (size_t i = 0; i < wn; i++) {
        double f = icpt + slope * wx[i];
        ss_tot += (wy[i] - mean) * (wy[i] - mean);
        ss_res += (wy[i] - f) * (wy[i] - f);
    }
    double r2 = ss_tot > 0 ? 1 - ss_res / ss_tot : (ss_res == 0 ? 1 : 0);
    out->r2 = r2 < 0 ? 0 : r2;
    out->growth_per_x = slope;
    out->intercept = icpt;
    memcpy(tmp, wy, wn * sizeof *tmp);
    double level = median(tmp, wn);
    out->baseline_bytes = level;

    /* Growth that matters: over the fitted window, at least 2% of the level and 8 MiB. */
    double span = wx[wn - 1] - wx[0];
    double floor_b = fmax(0.02 * level, 8 * MiB);
    int growing = slope > 0 && slope * span > floor_b;

    /* Excursions above the fit: a spike is a few points far above it. */
    for (size_t i = 0; i < wn; i++)
        tmp[i] = wy[i] - (icpt + slope * wx[i]);
    size_t top = 0;
    for (size_t i = 1; i < wn; i++)
        if (tmp[i] > tmp[top])
            top = i;
    double top_res = tmp[top];
    double *dev = malloc(wn * sizeof *dev);
    if (!dev) {
        st = od_fail(err, OD_ERR_NOMEM, "out of memory");
        goto done;
    }
    memcpy(dev, tmp, wn * sizeof *dev);
    double med = median(dev, wn);
    for (size_t i = 0; i < wn; i++)
        dev[i] = fabs(tmp[i] - med);
    double mad = median(dev, wn);
    free(dev);
    double thr = fmax(6 * 1.4826 * mad, fmax(0.05 * level, 32 * MiB));
    size_t outliers = 0;
    for (size_t i = 0; i < wn; i++)
        outliers += tmp[i] > thr;
    int spike = outliers >= 1 && outliers <= (wn / 5 > 1 ? wn / 5 : 1);

    if (growing) {
        /* Sustained or levelling off? Compare the later half's own slope. */
        size_t h = wn / 2;
        double late = wn - h >= 2 ? theil_sen(wx + h, wy + h, wn - h, scratch) : slope;
        double late_span = wx[wn - 1] - wx[h];
        (void)late_span;
        if (late < 0.25 * slope) /* a leak keeps its rate; settling memory slows down */
            out->verdict = OD_TREND_WARMING_UP;
        else if (out->r2 < 0.5)
            /* Rising, but no straight line explains it: a few excursions (spike), or
             * memory still settling or shared with other jobs (not yet a leak). */
            out->verdict = spike ? OD_TREND_SPIKE : OD_TREND_WARMING_UP;
        else
            out->verdict = OD_TREND_LEAK;
    } else {
        out->verdict = spike ? OD_TREND_SPIKE : OD_TREND_STABLE;
    }
    if (out->verdict == OD_TREND_SPIKE) {
        out->spike_x = wx[top];
        out->spike_bytes = wy[top];
        (void)top_res;
    }

    /* When does it reach capacity? From the higher of the last sample and the fit, and
     * from the last peak when the log has one: the peak is what hits the limit. */
    if (capacity_bytes > 0 && out->verdict == OD_TREND_LEAK && slope > 0) {
        double base = fmax(wy[wn - 1], icpt + slope * wx[wn - 1]);
        if (m != OD_METRIC_PEAK && s->y[OD_METRIC_PEAK])
            for (size_t i = s->n; i-- > 0;)
                if (!isnan(s->y[OD_METRIC_PEAK][i])) {
                    base = fmax(base, s->y[OD_METRIC_PEAK][i]);
                    break;
                }
        double left = (double)capacity_bytes - base;
        double dx = left > 0 ? left / slope : 0;
        out->have_projection = 1;
        out->projected_oom = s->time_indexed ? dx : wx[wn - 1] + ceil(dx);
    }
done:
    free(x), free(y), free(tmp), free(scratch);
    return st;
}
