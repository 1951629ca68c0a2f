/* trend.c - parse memory series and judge their trend.
 *
 * The fit is Theil-Sen (median of pairwise slopes): one long step or an OOM spike barely
 * moves it, where least squares would be dragged along. Warm-up is left out because
 * step 1 legitimately grows memory (PyTorch optimizers create their state lazily in the
 * first optimizer.step()), and an NVML series usually starts with an idle GPU. */
#include "read/trend.h"

#include <assert.h>
#include <ctype.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/lines.h"
#include "base/mem.h"

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

enum { COL_IGNORE = -1, COL_STEP = -2, COL_TIME = -3, COL_GPU = -4 };

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
    static const char *const gpus[] = {"gpu", "gpu_index", NULL};
    column c = {COL_IGNORE, 1};
    if (name_in(raw, gpus)) { /* watch --device all into one target: one GPU's rows only */
        c.kind = COL_GPU;
        return c;
    }
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

/* ---------- the streaming parser ----------
 * Text arrives in chunks and is split into lines (lines.h); a row keeps only its numbers:
 * its x and one double per memory column the input has. The first problem ends the parse,
 * so that a log given for a step log is refused at its first line, not after reading it
 * all: a line is checked for a NUL byte (binary data) before it is read as a row. */

enum { MODE_START, MODE_CSV, MODE_JSONL, MODE_ARRAY };

struct od_series_parser {
    od_lines lines;
    int mode;
    int started;            /* a non-space byte was seen */
    int have_ws_header;     /* CSV: the header was a blank line (spaces), at ws_header_off */
    uint64_t ws_header_off;
    column cols[64];
    int ncol;
    char sep;
    int csv_header_done;
    /* rows */
    size_t n, cap;
    double *x;
    double *y[OD_METRIC_COUNT];
    int have_metric[OD_METRIC_COUNT];
    int have_step, have_time;
    int have_gpu;           /* a gpu column: its first value, which every row must have */
    double gpu;
    int sorted;             /* x never decreased so far */
    /* a JSON array is parsed whole at the end */
    char *text;
    size_t text_len, text_cap;
    uint64_t text_off;      /* stream offset of text[0] */
    int array_shape;        /* 0: unknown yet, 1: '[' then '{' or ']', -1: anything else */
    int text_cut;           /* array_shape -1: the text was kept only up to ARRAY_PREFIX */
    /* outcome */
    od_status st;           /* the format error that ended the rows, OD_OK while none */
    od_error err;
    od_status final;        /* binary data, the line rule, out of memory */
    od_error final_err;
};

static int set_error(od_series_parser *p, od_status st)
{
    p->st = st;
    return 0;
}

static int set_final(od_series_parser *p, od_status st)
{
    p->final = st;
    return 1; /* stop reading lines */
}

/* Make room for row n: every array present grows together. */
static int grow_rows(od_series_parser *p)
{
    if (p->n < p->cap)
        return 1;
    size_t cap = p->cap;
    if (!od_grow((void **)&p->x, &cap, p->n + 1, sizeof *p->x))
        return 0;
    for (int m = 0; m < OD_METRIC_COUNT; m++) {
        size_t c = p->cap;
        if (p->y[m] && !od_grow((void **)&p->y[m], &c, cap, sizeof *p->y[m]))
            return 0;
    }
    p->cap = cap;
    return 1;
}

/* Start column m (absent so far): earlier rows have no value. */
static int add_metric(od_series_parser *p, int m)
{
    if (p->y[m])
        return 1;
    size_t cap = p->cap ? p->cap : 16;
    p->y[m] = malloc(cap * sizeof *p->y[m]);
    if (!p->y[m])
        return 0;
    for (size_t i = 0; i < p->n; i++)
        p->y[m][i] = NAN;
    if (!p->cap) {
        /* x too, so that all arrays share one capacity */
        p->x = malloc(cap * sizeof *p->x);
        if (!p->x)
            return 0;
        p->cap = cap;
    }
    return 1;
}

/* Append a row: x and the values in y (NaN where absent). */
static int push_row(od_series_parser *p, double x, const double *y)
{
    if (!grow_rows(p))
        return 0;
    if (p->n && x < p->x[p->n - 1])
        p->sorted = 0;
    p->x[p->n] = x;
    for (int m = 0; m < OD_METRIC_COUNT; m++)
        if (p->y[m])
            p->y[m][p->n] = y[m];
    p->n++;
    return 1;
}

/* Check value v of column c (in bytes once multiplied by its unit); step beats time. */
static int store(double *x, double *y, column c, double v, double *time_tmp)
{
    if (c.kind == COL_STEP) {
        *x = v;
    } else if (c.kind == COL_TIME) {
        *time_tmp = v;
    } else if (c.kind >= 0) {
        double b = v * c.mult;
        if (!(b >= 0) || b > 9.2e18)
            return 0;
        y[c.kind] = b;
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

/* A field's number, as strtod reads its trimmed, lower-cased text; plain integers of up to
 * 15 digits (every byte count) take a shortcut with the same, exact result. Returns 0 when
 * the field is not all number. */
static int field_number(const char *num, double *v)
{
    size_t i = 0;
    uint64_t u = 0;
    while (num[i] >= '0' && num[i] <= '9' && i < 15)
        u = u * 10 + (uint64_t)(num[i++] - '0');
    if (i && !num[i]) {
        *v = (double)u;
        return 1;
    }
    char *ne;
    *v = strtod(num, &ne);
    return !*ne;
}

static void csv_header(od_series_parser *p, const char *line, const char *he, uint64_t off)
{
    p->csv_header_done = 1;
    p->sep = memchr(line, ',', (size_t)(he - line)) ? ',' : memchr(line, '\t', (size_t)(he - line)) ? '\t' : ';';
    for (const char *f = line; f <= he && p->ncol < 64;) {
        const char *fe = memchr(f, p->sep, (size_t)(he - f));
        if (!fe)
            fe = he;
        char name[64];
        lower_trim(f, fe, name, sizeof name);
        column c = classify(name);
        p->cols[p->ncol++] = c;
        if (c.kind == COL_STEP) p->have_step = 1;
        if (c.kind == COL_TIME) p->have_time = 1;
        if (c.kind >= 0) p->have_metric[c.kind] = 1;
        f = fe + 1;
    }
    int any = 0;
    for (int m = 0; m < OD_METRIC_COUNT; m++)
        if (p->have_metric[m]) {
            any = 1;
            if (!add_metric(p, m)) {
                set_final(p, od_fail(&p->final_err, OD_ERR_NOMEM, "out of memory"));
                return;
            }
        }
    if (!(p->have_step || p->have_time) || !any)
        set_error(p, od_fail_at(&p->err, OD_ERR_FORMAT, off,
                                "expected a header with a step or time_s column and a memory column "
                                "(allocated, reserved, used or peak, optionally with _bytes)"));
}

/* A row's gpu value: the same GPU all along, else the series mixes GPUs and no trend of it
 * means anything. 0 after the error. */
static int same_gpu(od_series_parser *p, double v, uint64_t at)
{
    if (!p->have_gpu) {
        p->have_gpu = 1;
        p->gpu = v;
        return 1;
    }
    if (v == p->gpu)
        return 1;
    set_error(p, od_fail_at(&p->err, OD_ERR_FORMAT, at,
                            "a second GPU in one series (gpu %g after gpu %g): trend reads one GPU's series "
                            "(oomdoc watch --device all --out run.gpu{gpu}.csv writes one per GPU)", v, p->gpu));
    return 0;
}

static void csv_row(od_series_parser *p, const char *line, const char *le, uint64_t off)
{
    const char *q = line;
    while (q < le && isspace((unsigned char)*q))
        q++;
    if (q == le || *q == '#')
        return;
    if (p->n >= MAX_ROWS) {
        set_error(p, od_fail_at(&p->err, OD_ERR_LIMIT, off, "more than %u rows", MAX_ROWS));
        return;
    }
    double x = NAN, tm = NAN, y[OD_METRIC_COUNT];
    for (int m = 0; m < OD_METRIC_COUNT; m++)
        y[m] = NAN;
    int i = 0;
    for (const char *f = line; f <= le && i < p->ncol; i++) {
        const char *fe = memchr(f, p->sep, (size_t)(le - f));
        if (!fe)
            fe = le;
        column c = p->cols[i];
        uint64_t at = off + (uint64_t)(f - line);
        if (c.kind != COL_IGNORE) {
            char num[64];
            lower_trim(f, fe, num, sizeof num);
            if (c.kind == COL_GPU) { /* a number is a GPU index; anything else is left alone */
                double v;
                if (num[0] && field_number(num, &v) && isfinite(v) && !same_gpu(p, v, at))
                    return;
            } else if (num[0]) {
                double v;
                if (!field_number(num, &v) || !isfinite(v) || (c.kind >= 0 && v < 0) || fe - f > 60 ||
                    !store(&x, y, c, v, &tm)) {
                    set_error(p, od_fail_at(&p->err, OD_ERR_FORMAT, at, "expected a non-negative number in column %d",
                                            i + 1));
                    return;
                }
            } else if (c.kind == COL_STEP || (c.kind == COL_TIME && !p->have_step)) {
                set_error(p, od_fail_at(&p->err, OD_ERR_FORMAT, at, "expected a %s value in column %d",
                                        c.kind == COL_STEP ? "step" : "time", i + 1));
                return;
            }
        }
        f = fe + 1;
    }
    if (!p->have_step)
        x = tm;
    if (isnan(x)) {
        set_error(p, od_fail_at(&p->err, OD_ERR_FORMAT, off, "row without a step or time value"));
        return;
    }
    if (!push_row(p, x, y))
        set_final(p, od_fail(&p->final_err, OD_ERR_NOMEM, "out of memory"));
}

/* One JSON object as a row; off is where the row starts (errors point there). */
static void json_row(od_series_parser *p, json_t *o, uint64_t off)
{
    if (!json_is_object(o)) {
        set_error(p, od_fail_at(&p->err, OD_ERR_FORMAT, off, "expected a JSON object per row"));
        return;
    }
    if (p->n >= MAX_ROWS) {
        set_error(p, od_fail_at(&p->err, OD_ERR_LIMIT, off, "more than %u rows", MAX_ROWS));
        return;
    }
    const char *k;
    json_t *v;
    double tm = NAN, step = NAN, x = NAN, y[OD_METRIC_COUNT];
    for (int m = 0; m < OD_METRIC_COUNT; m++)
        y[m] = NAN;
    json_object_foreach(o, k, v) {
        char name[64];
        lower_trim(k, k + strlen(k), name, sizeof name);
        column c = classify(name);
        if (c.kind == COL_IGNORE || json_is_null(v) || (c.kind == COL_GPU && !json_is_number(v)))
            continue;
        if (!json_is_number(v)) {
            set_error(p, od_fail_at(&p->err, OD_ERR_FORMAT, off, "expected a number for \"%.40s\"", k));
            return;
        }
        double d = json_number_value(v);
        if (!isfinite(d) || (c.kind >= 0 && d < 0)) {
            set_error(p, od_fail_at(&p->err, OD_ERR_FORMAT, off, "expected a non-negative number for \"%.40s\"", k));
            return;
        }
        if (c.kind == COL_GPU) {
            if (!same_gpu(p, d, off))
                return;
        } else if (c.kind == COL_STEP) {
            step = d;
            p->have_step = 1;
        } else if (c.kind == COL_TIME) {
            tm = d;
            p->have_time = 1;
        } else {
            if (!store(&x, y, c, d, &tm)) {
                set_error(p, od_fail_at(&p->err, OD_ERR_FORMAT, off, "absurd value for \"%.40s\"", k));
                return;
            }
            p->have_metric[c.kind] = 1;
            if (!add_metric(p, c.kind)) {
                set_final(p, od_fail(&p->final_err, OD_ERR_NOMEM, "out of memory"));
                return;
            }
        }
    }
    x = !isnan(step) ? step : tm;
    if (isnan(x)) {
        set_error(p, od_fail_at(&p->err, OD_ERR_FORMAT, off, "row without a step or time_s value"));
        return;
    }
    if (!push_row(p, x, y))
        set_final(p, od_fail(&p->final_err, OD_ERR_NOMEM, "out of memory"));
}

static void jsonl_row(od_series_parser *p, const char *line, const char *le, uint64_t off)
{
    const char *q = line;
    while (q < le && isspace((unsigned char)*q))
        q++;
    if (q == le)
        return;
    json_error_t je;
    json_t *o = json_loadb(q, (size_t)(le - q), 0, &je);
    uint64_t at = off + (uint64_t)(q - line);
    if (!o) {
        set_error(p, od_fail_at(&p->err, OD_ERR_FORMAT, at + (uint64_t)je.position, "invalid JSON line: %s", je.text));
        return;
    }
    json_row(p, o, at);
    json_decref(o);
}

/* A JSON array whose first element is not an object is no series whatever follows (a
 * log whose lines start with "[rank0]" or a "[timestamp]"): its text is kept only this
 * far, where the JSON error (or the "object per row" one) is found. */
#define ARRAY_PREFIX (1u << 20)

static int keep_text(od_series_parser *p, const char *s, size_t n, int newline)
{
    if (p->array_shape < 0 && p->text_len + n + 1 > ARRAY_PREFIX) {
        p->text_cut = 1;
        return 1;
    }
    if (!od_grow((void **)&p->text, &p->text_cap, p->text_len + n + 2, 1))
        return 0;
    memcpy(p->text + p->text_len, s, n);
    p->text_len += n;
    if (newline)
        p->text[p->text_len++] = '\n';
    for (size_t i = 1; !p->array_shape && i < p->text_len; i++)
        if (!isspace((unsigned char)p->text[i]))
            p->array_shape = p->text[i] == '{' || p->text[i] == ']' ? 1 : -1;
    return 1;
}

/* A line before the first non-space byte decides what the input is. Returns the line's
 * part that starts the content, or NULL while only white space was seen. */
static const char *start_line(od_series_parser *p, const char *line, const char *le, uint64_t off)
{
    const char *q = line;
    while (q < le && isspace((unsigned char)*q))
        q++;
    const char *h = line; /* a CSV header starts after leading '\r' (the '\n' are lines) */
    while (h < le && *h == '\r')
        h++;
    if (q == le) {
        if (h < le && !p->have_ws_header) {
            p->have_ws_header = 1;
            p->ws_header_off = off + (uint64_t)(h - line);
        }
        return NULL;
    }
    p->started = 1;
    if (*q == '[') {
        p->mode = MODE_ARRAY;
        p->text_off = off + (uint64_t)(q - line);
        return q;
    }
    if (*q == '{') {
        p->mode = MODE_JSONL;
        return line;
    }
    p->mode = MODE_CSV;
    if (p->have_ws_header) {
        /* the header line was blank: no columns */
        p->csv_header_done = 1;
        set_error(p, od_fail_at(&p->err, OD_ERR_FORMAT, p->ws_header_off,
                                "expected a header with a step or time_s column and a memory column "
                                "(allocated, reserved, used or peak, optionally with _bytes)"));
        return line;
    }
    return h;
}

static void parse_array(od_series_parser *p);

static int on_line(void *ctx, const char *line, size_t len, uint64_t off, int newline)
{
    od_series_parser *p = ctx;
    const char *le = line + len;
    const char *nul = memchr(line, '\0', len);
    if (nul) {
        od_fail_at(&p->final_err, OD_ERR_FORMAT, off + (uint64_t)(nul - line), "binary data: expected CSV or JSON text");
        return set_final(p, OD_ERR_FORMAT);
    }
    if (p->st != OD_OK)
        return 1;
    const char *from = line;
    if (p->mode == MODE_START) {
        if (!(from = start_line(p, line, le, off)))
            return 0;
        if (p->st != OD_OK)
            return 1;
        off += (uint64_t)(from - line);
        if (p->mode == MODE_CSV) {
            csv_header(p, from, le, off);
            return p->final != OD_OK || p->st != OD_OK;
        }
    }
    switch (p->mode) {
    case MODE_CSV: csv_row(p, from, le, off); break;
    case MODE_JSONL: jsonl_row(p, from, le, off); break;
    case MODE_ARRAY:
        if (!keep_text(p, from, (size_t)(le - from), newline))
            return set_final(p, od_fail(&p->final_err, OD_ERR_NOMEM, "out of memory"));
        if (p->text_cut)
            parse_array(p); /* no series, whatever follows: the error is known now */
        break;
    }
    return p->final != OD_OK || p->st != OD_OK;
}

static int on_full_line(void *ctx, const char *line, size_t len, uint64_t off)
{
    return on_line(ctx, line, len, off, 1);
}

static int on_last_line(void *ctx, const char *line, size_t len, uint64_t off)
{
    return on_line(ctx, line, len, off, 0);
}

od_status od_series_parser_new(od_series_parser **out, od_error *err)
{
    *out = calloc(1, sizeof **out);
    if (!*out)
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    od_lines_init(&(*out)->lines);
    (*out)->sorted = 1;
    return OD_OK;
}

static od_status final_status(od_series_parser *p, od_error *err)
{
    if (err)
        *err = p->final_err;
    return p->final;
}

/* The status that ended the parse early (err filled), OD_OK while it goes on. */
static od_status early_status(od_series_parser *p, od_error *err)
{
    if (p->final != OD_OK)
        return final_status(p, err);
    if (p->st != OD_OK && err)
        *err = p->err;
    return p->st;
}

od_status od_series_feed(od_series_parser *p, const void *data, size_t n, od_error *err)
{
    if (p->final == OD_OK && p->st == OD_OK) {
        od_status st = od_lines_feed(&p->lines, data, n, on_full_line, p, &p->final_err);
        if (st != OD_OK)
            p->final = st;
    }
    return early_status(p, err);
}

void od_series_parser_free(od_series_parser *p)
{
    if (!p)
        return;
    od_lines_free(&p->lines);
    free(p->x);
    for (int m = 0; m < OD_METRIC_COUNT; m++)
        free(p->y[m]);
    free(p->text);
    free(p);
}

static void parse_array(od_series_parser *p)
{
    json_error_t je;
    json_t *root = json_loadb(p->text, p->text_len, 0, &je);
    free(p->text);
    p->text = NULL;
    if (!root && p->text_cut && (size_t)je.position + 4096 > p->text_len) {
        /* the cut, not the input, ended the JSON: its first element is no object */
        set_error(p, od_fail_at(&p->err, OD_ERR_FORMAT, p->text_off, "expected a JSON object per row"));
        return;
    }
    if (!root) {
        set_error(p, od_fail_at(&p->err, OD_ERR_FORMAT, p->text_off + (uint64_t)je.position, "invalid JSON: %s", je.text));
        return;
    }
    size_t i;
    json_t *v;
    json_array_foreach(root, i, v) {
        json_row(p, v, p->text_off);
        if (p->st != OD_OK || p->final != OD_OK)
            break;
    }
    json_decref(root);
}

typedef struct {
    double x;
    size_t order;
} sort_key;

static int cmp_key(const void *a, const void *b)
{
    const sort_key *x = a, *y = b;
    if (x->x != y->x)
        return x->x < y->x ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* Sort the rows by x, ties in input order. Returns 0 when out of memory. */
static int sort_rows(od_series_parser *p)
{
    sort_key *k = malloc(p->n * sizeof *k);
    double *tmp = malloc(p->n * sizeof *tmp);
    if (!k || !tmp) {
        free(k);
        free(tmp);
        return 0;
    }
    for (size_t i = 0; i < p->n; i++) {
        k[i].x = p->x[i];
        k[i].order = i;
    }
    od_sort(k, p->n, sizeof *k, cmp_key);
    for (int m = -1; m < OD_METRIC_COUNT; m++) {
        double *a = m < 0 ? p->x : p->y[m];
        if (!a)
            continue;
        for (size_t i = 0; i < p->n; i++)
            tmp[i] = a[k[i].order];
        memcpy(a, tmp, p->n * sizeof *a);
    }
    free(k);
    free(tmp);
    return 1;
}

od_status od_series_finish(od_series_parser *p, od_series **out, od_error *err)
{
    *out = NULL;
    if (p->final == OD_OK && p->st == OD_OK)
        od_lines_end(&p->lines, on_last_line, p);
    if (p->final != OD_OK)
        return final_status(p, err);
    if (!p->started)
        return od_fail_at(err, OD_ERR_FORMAT, 0, "empty input: expected a CSV header or JSON rows");
    if (p->st == OD_OK && p->mode == MODE_ARRAY)
        parse_array(p);
    if (p->final != OD_OK)
        return final_status(p, err);
    if (p->st != OD_OK) {
        if (err)
            *err = p->err;
        return p->st;
    }
    int any = 0;
    for (int m = 0; m < OD_METRIC_COUNT; m++)
        any |= p->have_metric[m];
    if (!any)
        return od_fail_at(err, OD_ERR_FORMAT, 0,
                          "expected a memory column (allocated, reserved, used or peak, optionally with _bytes)");
    if (!p->sorted && !sort_rows(p))
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    od_series *s = calloc(1, sizeof *s);
    if (!s || (!p->x && !(p->x = malloc(sizeof *p->x)))) {
        free(s);
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    }
    /* the arrays move to the series: trimming them would copy what realloc cannot shrink */
    s->time_indexed = !p->have_step;
    s->n = p->n;
    s->x = p->x;
    p->x = NULL;
    for (int m = 0; m < OD_METRIC_COUNT; m++) {
        s->y[m] = p->y[m];
        p->y[m] = NULL;
    }
    *out = s;
    return OD_OK;
}

od_status od_series_parse(const char *text, size_t len, od_series **out, od_error *err)
{
    od_series_parser *p = NULL;
    *out = NULL;
    od_status st = od_series_parser_new(&p, err);
    if (st == OD_OK)
        st = od_series_feed(p, text, len, err);
    if (st == OD_OK)
        st = od_series_finish(p, out, err);
    od_series_parser_free(p);
    return st;
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

/* The k-th smallest of v[0..n) (k < n, no NaN): quickselect, which leaves every element
 * before k no larger and every one after no smaller. O(n), where sorting was O(n log n):
 * a ten-million-row log takes three medians. */
static double select_k(double *v, size_t n, size_t k)
{
    assert(k < n);
    size_t lo = 0, hi = n - 1;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        double a = v[lo], b = v[mid], c = v[hi];
        double pivot = a < b ? (b < c ? b : a < c ? c : a) : (a < c ? a : b < c ? c : b);
        size_t i = lo, j = hi;
        for (;;) {
            while (v[i] < pivot)
                i++;
            while (v[j] > pivot)
                j--;
            if (i >= j)
                break;
            double t = v[i];
            v[i] = v[j];
            v[j] = t;
            i++;
            j--;
        }
        /* v[lo..j] <= pivot <= v[j+1..hi] */
        if (k <= j)
            hi = j;
        else
            lo = j + 1;
    }
    return v[k];
}

/* Median of v[0..n) (reorders v); of an even count, the mean of the middle two. */
static double median(double *v, size_t n)
{
    if (n == 0)
        return 0;
    double hi = select_k(v, n, n / 2);
    if (n % 2)
        return hi;
    double lo = v[0];
    for (size_t i = 1; i < n / 2; i++)
        lo = v[i] > lo ? v[i] : lo;
    return (lo + hi) / 2;
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

/* How far point (x, y) lies above the fitted line. */
static double residual(double x, double y, double icpt, double slope)
{
    return y - (icpt + slope * x);
}

/* How many first points are warm-up. A time series: skip the idle start (a plateau at the
 * first value), then a tenth of what follows. A step log: a tenth, at least the first step.
 * At least 3 points are left to fit. */
static size_t warmup(int time_indexed, const double *y, size_t n, double lo, double hi)
{
    size_t warm;
    if (time_indexed) {
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
    return n - warm < 3 ? n - 3 : warm;
}

/* The verdict of a fitted window wx, wy [0..wn) (out holds its fit: growth_per_x,
 * intercept, baseline_bytes): leak, warming up, spike or stable. tmp holds wn doubles,
 * scratch is theil_sen's. */
static void classify_fit(od_trend_fit *out, const double *wx, const double *wy, size_t wn, double *tmp, double *scratch)
{
    double slope = out->growth_per_x, icpt = out->intercept, level = out->baseline_bytes;
    /* Growth that matters: over the fitted window, at least 2% of the level and 8 MiB. */
    double span = wx[wn - 1] - wx[0];
    double floor_b = fmax(0.02 * level, 8 * MiB);
    int growing = slope > 0 && slope * span > floor_b;

    /* Excursions above the fit: a spike is a few points far above it. The residuals are
     * recomputed (the same expression, so the same doubles) rather than kept twice. */
    size_t top = 0;
    for (size_t i = 0; i < wn; i++) {
        tmp[i] = residual(wx[i], wy[i], icpt, slope);
        if (tmp[i] > tmp[top])
            top = i;
    }
    double med = median(tmp, wn);
    for (size_t i = 0; i < wn; i++)
        tmp[i] = fabs(residual(wx[i], wy[i], icpt, slope) - med);
    double mad = median(tmp, wn);
    double thr = fmax(6 * 1.4826 * mad, fmax(0.05 * level, 32 * MiB));
    size_t outliers = 0;
    for (size_t i = 0; i < wn; i++)
        outliers += residual(wx[i], wy[i], icpt, slope) > thr;
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
    }

}

/* When memory reaches the capacity: from the higher of the last sample and the fit, and
 * from the last peak when the log has one (the peak is what hits the limit). */
static void project(od_trend_fit *out, const od_series *s, od_metric m, uint64_t capacity_bytes, const double *wx,
                    const double *wy, size_t wn)
{
    double slope = out->growth_per_x, icpt = out->intercept;
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

od_status od_trend_analyze(const od_series *s, od_metric m, uint64_t capacity_bytes,
                           od_trend_fit *out, od_error *err)
{
    memset(out, 0, sizeof *out);
    out->metric = m;
    if (m >= OD_METRIC_COUNT || !s->y[m])
        return od_fail(err, OD_ERR_ARG, "the input has no %s column", od_metric_name(m));
    /* The points with a value: the series' own arrays when the column has no gap, so that
     * a long log costs one scratch array here, not three. */
    size_t n = 0, gaps = 0;
    for (size_t i = 0; i < s->n; i++)
        gaps += isnan(s->y[m][i]) != 0;
    double *xbuf = NULL, *ybuf = NULL;
    const double *x = s->x, *y = s->y[m];
    double *tmp = malloc((s->n + 1) * sizeof *tmp);
    double *scratch = malloc(((size_t)MAX_BINS * (MAX_BINS - 1) / 2 + 2 * MAX_BINS) * sizeof *scratch);
    if (gaps) {
        x = xbuf = malloc((s->n - gaps + 1) * sizeof *xbuf);
        y = ybuf = malloc((s->n - gaps + 1) * sizeof *ybuf);
    }
    if (!x || !y || !tmp || !scratch) {
        free(xbuf), free(ybuf), free(tmp), free(scratch);
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    }
    if (gaps) {
        for (size_t i = 0; i < s->n; i++)
            if (!isnan(s->y[m][i])) {
                xbuf[n] = s->x[i];
                ybuf[n++] = s->y[m][i];
            }
    } else {
        n = s->n;
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

    size_t warm = warmup(s->time_indexed, y, n, lo, hi);
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

    classify_fit(out, wx, wy, wn, tmp, scratch);

    if (capacity_bytes > 0 && out->verdict == OD_TREND_LEAK && slope > 0)
        project(out, s, m, capacity_bytes, wx, wy, wn);
done:
    free(xbuf), free(ybuf), free(tmp), free(scratch);
    return st;
}
