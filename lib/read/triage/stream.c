/* stream.c - the triage fed in chunks: a log is read a line at a time and only the lines the
 * scan can use are kept: every line a rules.def row or a table reader reads (the index of
 * their phrases decides, scan.h), BEFORE_LINES lines (and at least BEFORE_BYTES) before it,
 * AFTER_LINES after it (the most any multi-line reading looks ahead: a memory_summary() table
 * is 120 rows), the rows of nvidia-smi's process table and CSV, and the text of a
 * memory_stats() dump. Kept lines are joined in order, an empty line where lines were left
 * out (every multi-line reading stops at one), and scanned as a whole text would be, with
 * the words the whole input named; offsets and line numbers are mapped back. So the result
 * is the whole-text scan's, for the memory of the lines that matter: an ordinary log line
 * costs the index's probe of each byte and nothing kept. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "base/lines.h"
#include "base/mem.h"
#include "read/triage/scan.h"

#define BEFORE_LINES 8
#define BEFORE_BYTES 8192     /* nvidia-smi -q: the GPU header is looked for 4 KiB back */
#define BEFORE_MAX_BYTES (1u << 20)
#define AFTER_LINES 128
#define STATS_MAX_BYTES (16u << 20) /* a memory_stats() dump is a few KiB */

typedef struct {
    uint64_t comp_off, comp_line; /* where a run of consecutive kept lines starts in the kept text */
    uint64_t orig_off, orig_line; /* and in the input */
} segment;

typedef struct {
    size_t at, len;      /* bytes in the ring buffer */
    uint64_t off, line;  /* in the input */
    int newline;         /* the line ended with '\n' */
} ring_line;

struct od_triage_stream {
    od_lines lines;
    od_tr_index *ix;
    od_tr_hits hits;
    od_tr_set named;            /* context rows the input names (retired from ix as found) */
    char *norm;                 /* the current line, normalized (for the memory_stats readers) */
    size_t norm_cap;
    char tail[OD_TR_CROSS_SIDE]; /* the previous line's last bytes, for phrases across the break */
    size_t tail_len;
    int tail_cut;               /* a phrase's key on it ran off its end */
    uint64_t lineno;            /* lines read */
    /* lines before the next anchor, oldest first */
    char *ring;
    size_t ring_start, ring_len, ring_cap;
    ring_line *rl;
    size_t rl_start, rl_n, rl_cap;
    size_t ring_bytes;          /* bytes of the lines in rl, a line break each included */
    unsigned after_left;        /* lines still to keep after the last anchor */
    int in_procs, in_smi_csv;
    /* what is kept */
    char *kept;
    size_t kept_len, kept_cap;
    uint64_t kept_lines;        /* line breaks in kept */
    segment *segs;
    size_t n_segs, cap_segs;
    uint64_t last_line;         /* input line number of the last kept line; 0: none yet */
    /* a memory_stats() dump: the whole text while it may be one */
    char *stats;
    size_t stats_len, stats_cap;
    int stats_state;            /* 0: only white space so far, 1: starts with '{', -1: not one */
    od_repr_reader repr;        /* a memory_stats dict printed by Python, read as it comes */
    od_status st;
    od_error err;
};

static int put(char **buf, size_t *len, size_t *cap, const char *p, size_t n)
{
    if (!od_grow((void **)buf, cap, *len + n + 1, 1))
        return 0;
    memcpy(*buf + *len, p, n);
    *len += n;
    return 1;
}

/* Keep one line of the input (normalized as it is copied): off and line are its place there. */
static int keep_line(od_triage_stream *ts, const char *p, size_t n, uint64_t off, uint64_t line, int newline)
{
    if (!ts->last_line || line != ts->last_line + 1) {
        if (ts->last_line) {
            if (!put(&ts->kept, &ts->kept_len, &ts->kept_cap, "\n", 1))
                return 0;
            ts->kept_lines++;
        }
        if (!od_grow((void **)&ts->segs, &ts->cap_segs, ts->n_segs + 1, sizeof *ts->segs))
            return 0;
        ts->segs[ts->n_segs++] = (segment){ts->kept_len, ts->kept_lines + 1, off, line};
    }
    size_t at = ts->kept_len;
    if (!put(&ts->kept, &ts->kept_len, &ts->kept_cap, p, n) ||
        (newline && !put(&ts->kept, &ts->kept_len, &ts->kept_cap, "\n", 1)))
        return 0;
    od_tr_normalize(ts->kept + at, n);
    ts->kept_lines += newline != 0;
    ts->last_line = line;
    return 1;
}

/* Keep the lines waiting in the ring (the context before an anchor), oldest first. */
static int flush_ring(od_triage_stream *ts)
{
    for (size_t i = 0; i < ts->rl_n; i++) {
        const ring_line *r = &ts->rl[ts->rl_start + i];
        if (!keep_line(ts, ts->ring + r->at, r->len, r->off, r->line, r->newline))
            return 0;
    }
    ts->rl_start = ts->rl_n = 0;
    ts->ring_start = ts->ring_len = 0;
    ts->ring_bytes = 0;
    return 1;
}

/* Hold a line that may turn out to precede an anchor; forget the oldest beyond what the
 * scanner looks back at. A line counts its line break too, as it does in the whole text the
 * scanner looks back through: else empty lines, which count nothing, were never forgotten
 * (a gzip of 200 M newlines held 8 GiB). */
static int hold_line(od_triage_stream *ts, const char *p, size_t n, uint64_t off, uint64_t line, int newline)
{
    while (ts->rl_n > BEFORE_LINES && (ts->ring_bytes - (ts->rl[ts->rl_start].len + 1) >= BEFORE_BYTES ||
                                       ts->ring_bytes + n + 1 > BEFORE_MAX_BYTES)) {
        ts->ring_bytes -= ts->rl[ts->rl_start].len + 1;
        ts->ring_start = ts->rl[ts->rl_start].at + ts->rl[ts->rl_start].len;
        ts->rl_start++;
        ts->rl_n--;
    }
    if (ts->rl_n == 0)
        ts->ring_start = ts->ring_len = ts->rl_start = 0;
    /* compact when the forgotten front outweighs what is held */
    if (ts->ring_start > ts->ring_len / 2 + 4096) {
        memmove(ts->ring, ts->ring + ts->ring_start, ts->ring_len - ts->ring_start);
        for (size_t i = 0; i < ts->rl_n; i++)
            ts->rl[ts->rl_start + i].at -= ts->ring_start;
        ts->ring_len -= ts->ring_start;
        ts->ring_start = 0;
    }
    if (ts->rl_start > 64 && ts->rl_start > ts->rl_n) {
        memmove(ts->rl, ts->rl + ts->rl_start, ts->rl_n * sizeof *ts->rl);
        ts->rl_start = 0;
    }
    size_t at = ts->ring_len;
    if (!put(&ts->ring, &ts->ring_len, &ts->ring_cap, p, n) ||
        !od_grow((void **)&ts->rl, &ts->rl_cap, ts->rl_start + ts->rl_n + 1, sizeof *ts->rl))
        return 0;
    ts->rl[ts->rl_start + ts->rl_n++] = (ring_line){at, n, off, line, newline}; /* normalized when kept */
    ts->ring_bytes += n + 1;
    return 1;
}

static int is_table_row(const char *p, size_t n)
{
    size_t i = 0;
    while (i < n && (p[i] == ' ' || p[i] == '\t'))
        i++;
    return i < n && p[i] == '|';
}

/* The memory_stats readers: a dump kept whole while the input may be one, and the dicts
 * Python printed, read as their lines pass (normalized, as the whole-text scan reads them).
 * Returns 0, or 1 when out of memory. */
static int stats_line(od_triage_stream *ts, const char *line, size_t n, int newline)
{
    if (ts->stats_state == 0) {
        size_t i = 0;
        while (i < n && isspace((unsigned char)line[i]))
            i++;
        if (i < n)
            ts->stats_state = line[i] == '{' ? 1 : -1;
    }
    int repr = od_repr_active(&ts->repr) || memchr(line, '{', n) ||
               (ts->hits.readers & (1u << OD_READER_PY_STATS));
    if (!repr && ts->stats_state < 0)
        return 0;
    if (!od_grow((void **)&ts->norm, &ts->norm_cap, n + 1, 1))
        return 1;
    memcpy(ts->norm, line, n);
    od_tr_normalize(ts->norm, n);
    if (repr) {
        od_repr_line(&ts->repr, ts->norm, n);
        if (ts->repr.nomem)
            return 1;
    }
    if (ts->stats_state >= 0) {
        if (ts->stats_len + n + 1 > STATS_MAX_BYTES) {
            ts->stats_state = -1;
        } else if (!put(&ts->stats, &ts->stats_len, &ts->stats_cap, ts->norm, n) ||
                   (newline && !put(&ts->stats, &ts->stats_len, &ts->stats_cap, "\n", 1))) {
            return 1;
        }
        if (ts->stats_state < 0) {
            free(ts->stats);
            ts->stats = NULL;
            ts->stats_len = ts->stats_cap = 0;
        }
    }
    return 0;
}

/* The last two non-blank bytes of p[0..n) into a (a[0] first), the first two into b. */
static void edge_bytes(const char *p, size_t n, unsigned char a[2], unsigned char b[2])
{
    a[0] = a[1] = b[0] = b[1] = 0;
    for (size_t i = n, k = 0; i-- > 0 && k < 2;)
        if (!OD_TR_BLANK(p[i]))
            a[1 - k++] = (unsigned char)p[i];
    for (size_t i = 0, k = 0; i < n && k < 2; i++)
        if (!OD_TR_BLANK(p[i]))
            b[k++] = (unsigned char)p[i];
}

/* Could unwrap() rejoin the previous line and p[0..n) (after its indentation, h) because a
 * phrase runs across the break, read as a space or as nothing? */
static int crosses_break(od_triage_stream *ts, const char *p, size_t n, size_t h)
{
    if (!ts->tail_len || h >= n)
        return 0;
    unsigned char a[2], b[2], x[2];
    edge_bytes(ts->tail, ts->tail_len, a, x);
    edge_bytes(p + h, n - h, x, b);
    if (!ts->tail_cut && !ts->hits.cut_front && !od_tr_may_cross(ts->ix, a, b))
        return 0;
    char win[2 * OD_TR_CROSS_SIDE + 1];
    size_t t = ts->tail_len, k = n - h < OD_TR_CROSS_SIDE ? n - h : OD_TR_CROSS_SIDE;
    memcpy(win, ts->tail, t);
    memcpy(win + t + 1, p + h, k);
    win[t] = ' ';
    if (od_tr_crosses(ts->ix, win, win + t + 1 + k, t))
        return 1;
    memmove(win + t, win + t + 1, k);
    return od_tr_crosses(ts->ix, win, win + t + k, t);
}

/* Does the line (its hits in ts->hits) hold a phrase a row or a table reader reads? */
static int reads_line(const od_triage_stream *ts)
{
    const od_tr_hits *h = &ts->hits;
    if (h->readers & ~(1u << OD_READER_PY_STATS))
        return 1;
    for (size_t w = 0; w < OD_SET_WORDS; w++)
        for (uint64_t m = h->touched.w[w]; m; m &= m - 1) {
            size_t k = w * 64 + (size_t)__builtin_ctzll(m);
            if (od_tr_rule_reads(h, k))
                return 1;
        }
    return 0;
}

/* The context rows the line names join the input's; the index stops looking for them. */
static void note_contexts(od_triage_stream *ts)
{
    for (size_t w = 0; w < OD_SET_WORDS; w++)
        for (uint64_t m = ts->hits.contexts.w[w] & ~ts->named.w[w]; m; m &= m - 1) {
            size_t c = w * 64 + (size_t)__builtin_ctzll(m);
            OD_SET_ADD(ts->named, c);
            od_tr_index_retire_context(ts->ix, c);
        }
}

static int stream_line(od_triage_stream *ts, const char *p, size_t n, uint64_t off, int newline)
{
    uint64_t lineno = ++ts->lineno;
    od_tr_hits_of(ts->ix, p, p, p + n, &ts->hits);
    note_contexts(ts);
    if (stats_line(ts, p, n, newline)) {
        ts->st = od_fail(&ts->err, OD_ERR_NOMEM, "out of memory");
        return 1;
    }
    int anchor = reads_line(ts);
    size_t h = 0;
    while (h < n && (p[h] == ' ' || p[h] == '\t'))
        h++;
    if (!anchor)
        anchor = crosses_break(ts, p, n, h);
    ts->tail_len = n < OD_TR_CROSS_SIDE ? n : OD_TR_CROSS_SIDE;
    memcpy(ts->tail, p + n - ts->tail_len, ts->tail_len);
    ts->tail_cut = ts->hits.cut_back;

    /* the rows of tables the scanner reads to their end */
    int has_comma = (ts->in_smi_csv || (ts->hits.readers & (1u << OD_READER_SMI_CSV))) && memchr(p, ',', n);
    if (ts->in_smi_csv && !has_comma)
        ts->in_smi_csv = 0;
    if (ts->in_procs && is_table_row(p, n))
        anchor = 1;
    if (ts->in_smi_csv)
        anchor = 1;
    if (ts->hits.readers & (1u << OD_READER_SMI_PROCESSES))
        ts->in_procs = 1;
    if (has_comma && (ts->hits.readers & (1u << OD_READER_SMI_CSV)))
        ts->in_smi_csv = 1;

    int ok;
    if (anchor) {
        ok = flush_ring(ts) && keep_line(ts, p, n, off, lineno, newline);
        ts->after_left = AFTER_LINES;
    } else if (ts->after_left) {
        ok = keep_line(ts, p, n, off, lineno, newline);
        ts->after_left--;
    } else {
        ok = hold_line(ts, p, n, off, lineno, newline);
    }
    if (!ok) {
        ts->st = od_fail(&ts->err, OD_ERR_NOMEM, "out of memory");
        return 1;
    }
    return 0;
}

static int on_stream_line(void *ctx, const char *line, size_t len, uint64_t off)
{
    return stream_line(ctx, line, len, off, 1);
}

static int on_stream_last(void *ctx, const char *line, size_t len, uint64_t off)
{
    return stream_line(ctx, line, len, off, 0);
}

od_status od_triage_stream_new(od_triage_stream **out, od_error *err)
{
    od_triage_stream *ts = calloc(1, sizeof *ts);
    *out = ts;
    if (!ts || !(ts->ix = od_tr_index_new())) {
        free(ts);
        *out = NULL;
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    }
    od_lines_init(&ts->lines);
    return OD_OK;
}

size_t od_triage_stream_held_bytes(const od_triage_stream *ts)
{
    return ts->lines.cap + ts->norm_cap + ts->ring_cap + ts->rl_cap * sizeof *ts->rl + ts->kept_cap +
           ts->cap_segs * sizeof *ts->segs + ts->stats_cap;
}

od_status od_triage_stream_feed(od_triage_stream *ts, const void *data, size_t n, od_error *err)
{
    if (ts->st == OD_OK) {
        od_status st = od_lines_feed(&ts->lines, data, n, on_stream_line, ts, &ts->err);
        if (st != OD_OK)
            ts->st = st;
    }
    if (ts->st != OD_OK && err)
        *err = ts->err;
    return ts->st;
}

/* The input's place of a kept-text offset and line number. */
static void map_back(const od_triage_stream *ts, uint64_t *offset, uint64_t *line)
{
    size_t lo = 0, hi = ts->n_segs;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (ts->segs[mid].comp_off <= *offset)
            lo = mid;
        else
            hi = mid;
    }
    const segment *g = &ts->segs[lo];
    *offset = g->orig_off + (*offset - g->comp_off);
    *line = g->orig_line + (*line - g->comp_line);
}

od_status od_triage_stream_finish(od_triage_stream *ts, od_triage **out, od_error *err)
{
    *out = NULL;
    if (ts->st == OD_OK)
        od_lines_end(&ts->lines, on_stream_last, ts);
    if (ts->st != OD_OK) {
        if (err)
            *err = ts->err;
        return ts->st;
    }
    od_tr_input in = {ts->named};
    if (!put(&ts->kept, &ts->kept_len, &ts->kept_cap, "", 0))
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    ts->kept[ts->kept_len] = '\0';
    od_repr_end(&ts->repr);
    od_status st = od_tr_scan_text(ts->kept, ts->kept_len, &in, ts->stats_state > 0 ? ts->stats : NULL,
                                   ts->stats_len, ts->repr.found ? &ts->repr.m : NULL, out, err);
    if (st != OD_OK)
        return st;
    od_triage *t = *out;
    for (size_t i = 0; i < t->n_reports; i++)
        map_back(ts, &t->reports[i].offset, &t->reports[i].line);
    for (size_t i = 0; i < t->n_summaries; i++)
        map_back(ts, &t->summaries[i].offset, &t->summaries[i].line);
    return OD_OK;
}

void od_triage_stream_free(od_triage_stream *ts)
{
    if (!ts)
        return;
    od_lines_free(&ts->lines);
    od_tr_index_free(ts->ix);
    free(ts->norm);
    free(ts->ring);
    free(ts->rl);
    free(ts->kept);
    free(ts->segs);
    free(ts->stats);
    od_repr_drop(&ts->repr);
    free(ts);
}

od_status od_triage_parse(const char *text, size_t len, od_triage **out, od_error *err)
{
    od_triage_stream *ts = NULL;
    *out = NULL;
    od_status st = od_triage_stream_new(&ts, err);
    if (st == OD_OK)
        st = od_triage_stream_feed(ts, text, len, err);
    if (st == OD_OK)
        st = od_triage_stream_finish(ts, out, err);
    od_triage_stream_free(ts);
    return st;
}

/* ---------- the whole text ---------- */

od_status od_triage_parse_whole(const char *text, size_t len, od_triage **out, od_error *err)
{
    *out = NULL;
    od_tr_index *ix = od_tr_index_new();
    od_tr_hits *h = malloc(sizeof *h);
    char *buf = malloc(len + 1);
    if (!ix || !h || !buf) {
        od_tr_index_free(ix);
        free(h);
        free(buf);
        return od_fail(err, OD_ERR_NOMEM, "out of memory reading %zu bytes", len);
    }
    /* the words the input names, line by line as the stream finds them */
    od_tr_input in;
    memset(&in, 0, sizeof in);
    for (const char *p = text, *e; p < text + len; p = e + 1) {
        e = memchr(p, '\n', (size_t)(text + len - p));
        if (!e)
            e = text + len;
        od_tr_hits_of(ix, p, p, e, h);
        for (size_t w = 0; w < OD_SET_WORDS; w++)
            in.contexts.w[w] |= h->contexts.w[w];
    }
    od_tr_index_free(ix);
    free(h);
    if (len)
        memcpy(buf, text, len);
    buf[len] = '\0';
    od_tr_normalize(buf, len);
    od_repr_reader rr;
    memset(&rr, 0, sizeof rr);
    for (const char *p = buf, *e; p <= buf + len; p = e + 1) {
        e = memchr(p, '\n', (size_t)(buf + len - p));
        if (!e)
            e = buf + len;
        od_repr_line(&rr, p, (size_t)(e - p));
    }
    od_repr_end(&rr);
    od_status st = rr.nomem ? od_fail(err, OD_ERR_NOMEM, "out of memory reading %zu bytes", len)
                            : od_tr_scan_text(buf, len, &in, buf, len, rr.found ? &rr.m : NULL, out, err);
    od_repr_drop(&rr);
    free(buf);
    return st;
}

void od_triage_free(od_triage *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n_reports; i++)
        free(t->reports[i].other);
    free(t->reports);
    free(t->summaries);
    free(t->stats);
    free(t->gpus);
    free(t->procs);
    free(t);
}
