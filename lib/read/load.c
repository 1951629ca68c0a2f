/* load.c - one input's kind and contents, read once (see load.h). */
#include "read/load.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/lines.h"
#include "base/mem.h"
#include "read/hfconfig.h"

/* A text that opens with '{' is kept whole while it is at most this size: a model's
 * config.json is told by its whole text (they are a few KiB). */
#define KEEP_TEXT (16u << 20)

const char *od_input_kind_name(od_input_kind k)
{
    static const char *const n[] = {"log", "series", "snapshot", "config", "profile", "unrecognized"};
    return k <= OD_INPUT_NOTHING ? n[k] : "?";
}

/* The stream with its first bytes taken: the head (to tell the kind) and the rest of the
 * chunk it was cut from, which the passes below hand on before the stream's next bytes. */
/* ---------- a whole text, under the line-break rule ---------- */

typedef struct {
    char *buf;
    size_t len, cap;
    od_lines lines; /* only to apply the line-break rule */
    od_error err;
    od_status failed;
} slurp;

static int no_line(void *ctx, const char *line, size_t len, uint64_t offset)
{
    (void)ctx, (void)line, (void)len, (void)offset;
    return 0;
}

static int slurp_chunk(void *ctx, const void *data, size_t n)
{
    slurp *s = ctx;
    if (od_lines_feed(&s->lines, data, n, no_line, NULL, &s->err) != OD_OK) {
        s->failed = s->err.status;
        return 1;
    }
    if (!od_grow((void **)&s->buf, &s->cap, s->len + n + 1, 1)) {
        s->failed = od_fail(&s->err, OD_ERR_NOMEM, "out of memory");
        return 1;
    }
    memcpy(s->buf + s->len, data, n);
    s->len += n;
    return 0;
}

static od_status slurp_headed(od_headed *h, char **text, size_t *len, od_error *err)
{
    slurp s;
    memset(&s, 0, sizeof s);
    od_lines_init(&s.lines);
    od_status st = od_headed_each(h, slurp_chunk, &s, err);
    od_lines_free(&s.lines);
    if (st == OD_OK && s.failed) {
        *err = s.err;
        st = s.failed;
    }
    if (st == OD_OK && !s.buf && !(s.buf = malloc(1)))
        st = od_fail(err, OD_ERR_NOMEM, "out of memory");
    if (st != OD_OK) {
        free(s.buf);
        return st;
    }
    s.buf[s.len] = '\0';
    *text = s.buf;
    *len = s.len;
    return OD_OK;
}

od_status od_load_text(od_input *in, char **text, size_t *len, od_error *err)
{
    od_headed h;
    memset(&h, 0, sizeof h);
    h.in = in;
    return slurp_headed(&h, text, len, err);
}

/* ---------- text: series and triage in one pass ---------- */

typedef struct {
    od_series_parser *sp;  /* NULL once the input cannot be a series */
    od_triage_stream *ts;
    char *text;
    size_t len, cap;
    int keep;              /* 1: the text may be a config.json (it opens with '{') and is short
                              enough to keep; 0: not kept; -1: only white space so far */
    int nomem;
    od_error series_err;   /* why the series reader stopped, once sp is NULL */
} text_pass;

static void drop_text(text_pass *p)
{
    free(p->text);
    p->text = NULL;
    p->len = p->cap = 0;
}

static int feed_pass(void *ctx, const void *data, size_t n)
{
    text_pass *p = ctx;
    if (p->sp && od_series_feed(p->sp, data, n, &p->series_err) != OD_OK) {
        od_series_parser_free(p->sp); /* final: not a series (or out of memory, told below) */
        p->sp = NULL;
    }
    if (od_triage_stream_feed(p->ts, data, n, NULL) != OD_OK)
        return 1;
    for (size_t i = 0; p->keep < 0 && i < n; i++)
        if (!isspace(((const unsigned char *)data)[i]))
            p->keep = ((const char *)data)[i] == '{';
    if (p->keep > 0 && p->len + n > KEEP_TEXT)
        p->keep = 0;
    if (!p->keep && p->text)
        drop_text(p);
    if (p->keep > 0) {
        if (!od_grow((void **)&p->text, &p->cap, p->len + n + 1, 1)) {
            p->nomem = 1;
            return 1;
        }
        memcpy(p->text + p->len, data, n);
        p->len += n;
    }
    return 0;
}

/* Read a text whose head decided head_kind (OD_FILE_UNDECIDED, or OD_FILE_BFC_LOG) in one
 * pass feeding the series parser and the triage stream together, and decide its kind as
 * inputkind.h orders kinds. A config.json's text comes back in *config (else NULL). */
static od_status read_text(od_headed *h, od_file_kind head_kind, od_loaded *out, char **config, size_t *config_len,
                           od_error *err)
{
    text_pass p = {.keep = -1};
    od_status st = OD_OK, series_st = OD_ERR_FORMAT;
    *config = NULL;
    if ((head_kind != OD_FILE_BFC_LOG && (st = od_series_parser_new(&p.sp, err)) != OD_OK) ||
        (st = od_triage_stream_new(&p.ts, err)) != OD_OK)
        goto out;
    if ((st = od_headed_each(h, feed_pass, &p, err)) != OD_OK)
        goto out;
    if ((st = od_triage_stream_feed(p.ts, NULL, 0, err)) != OD_OK) /* what stopped the reading */
        goto out;
    if (p.nomem) {
        st = od_fail(err, OD_ERR_NOMEM, "out of memory");
        goto out;
    }
    od_error_clear(&out->series_error);
    if (!p.sp && head_kind != OD_FILE_BFC_LOG)
        out->series_error = p.series_err;
    if (p.sp && (series_st = od_series_finish(p.sp, &out->series, &out->series_error)) == OD_ERR_NOMEM) {
        *err = out->series_error;
        st = series_st;
        goto out;
    }
    if ((st = od_triage_stream_finish(p.ts, &out->triage, err)) != OD_OK)
        goto out;
    if (p.keep > 0 && !p.text && !(p.text = calloc(1, 1))) {
        st = od_fail(err, OD_ERR_NOMEM, "out of memory");
        goto out;
    }
    if (p.keep > 0)
        p.text[p.len] = '\0';
    out->file_kind = head_kind == OD_FILE_BFC_LOG ? OD_FILE_BFC_LOG
                                                  : od_file_kind_settle(p.keep > 0 ? p.text : NULL, p.len, series_st,
                                                                        out->triage);
    if (out->file_kind != OD_FILE_SERIES) {
        od_series_free(out->series);
        out->series = NULL;
    }
    if (out->file_kind != OD_FILE_LOG && out->file_kind != OD_FILE_BFC_LOG) {
        od_triage_free(out->triage);
        out->triage = NULL;
    }
    if (out->file_kind == OD_FILE_CONFIG) {
        *config = p.text;
        *config_len = p.len;
        p.text = NULL;
    }
out:
    od_series_parser_free(p.sp);
    od_triage_stream_free(p.ts);
    free(p.text);
    return st;
}

/* ---------- the kinds ---------- */

static od_input_kind diag_kind(od_file_kind k)
{
    switch (k) {
    case OD_FILE_SNAPSHOT:
    case OD_FILE_SNAPSHOT_GZIP: return OD_INPUT_SNAPSHOT;
    case OD_FILE_CONFIG: return OD_INPUT_CONFIG;
    case OD_FILE_SERIES: return OD_INPUT_SERIES;
    case OD_FILE_BFC_LOG:
    case OD_FILE_LOG: return OD_INPUT_LOG;
    case OD_FILE_NOTHING:
    case OD_FILE_UNDECIDED: return OD_INPUT_NOTHING;
    default: return OD_INPUT_PROFILE;
    }
}

/* A profiler record from the rest of the stream (head first). */
static od_status load_profile_resumed(od_headed *h, od_profile **out, od_error *err)
{
    od_input *in = NULL;
    od_status st = od_input_open_resumed(h->head, h->head_len, h->pending, h->pending_len, h->in, &in, err);
    if (st == OD_OK)
        st = od_profile_load(in, out, err);
    od_input_close(in);
    return st;
}

static od_status load_profile_memory(const char *text, size_t len, od_profile **out, od_error *err)
{
    od_input *in = NULL;
    od_status st = od_input_open_memory(text, len, &in, err);
    if (st == OD_OK)
        st = od_profile_load(in, out, err);
    od_input_close(in);
    return st;
}

/* A BFC allocator log: an OOM log first (triage), its allocator figures a profile too. Read
 * as text in one pass, then again from the reopener; without one, held whole and read from
 * memory twice. */
static od_status load_bfc(od_headed *h, const od_reopener *again, od_loaded *out, od_error *err)
{
    od_status st;
    if (again && again->open) {
        char *cfg = NULL;
        size_t cl;
        if ((st = read_text(h, OD_FILE_BFC_LOG, out, &cfg, &cl, err)) != OD_OK)
            return st;
        free(cfg);
        od_input *in2 = again->open(again->ctx, err);
        if (!in2)
            return err->status ? err->status : OD_ERR_IO;
        st = od_profile_load(in2, &out->profile, err);
        if (again->close)
            again->close(again->ctx, in2);
        return st;
    }
    char *text = NULL;
    size_t len = 0;
    if ((st = slurp_headed(h, &text, &len, err)) != OD_OK)
        return st;
    st = load_profile_memory(text, len, &out->profile, err);
    if (st == OD_OK)
        st = od_triage_parse(text, len, &out->triage, err);
    free(text);
    out->file_kind = OD_FILE_BFC_LOG;
    return st;
}

od_status od_load(od_input *in, const od_reopener *again, od_loaded *out, od_error *err)
{
    const char *name = out->name;
    memset(out, 0, sizeof *out);
    out->name = name;
    od_headed h;
    od_status st = od_headed_take(in, &h, err);
    if (st != OD_OK)
        return st;
    od_file_kind k = OD_FILE_UNDECIDED;
    unsigned flags = OD_DETECT_HEAD | (od_input_is_gzip(in) ? OD_DETECT_GZIP : 0);
    od_file_kind_detect(h.head, h.head_len, flags, &k, err); /* cannot fail on a head */
    out->file_kind = k;
    if (od_file_kind_snapshot(k)) {
        /* streamed on from where the head was taken, a file or a pipe alike */
        od_input *rest = NULL;
        st = od_input_open_resumed(h.head, h.head_len, h.pending, h.pending_len, in, &rest, err);
        if (st == OD_OK)
            st = od_snapshot_load(rest, &out->snapshot, err);
        od_input_close(rest);
    } else if (k == OD_FILE_BFC_LOG) {
        st = load_bfc(&h, again, out, err);
    } else if (od_file_kind_profile(k) >= 0) {
        st = load_profile_resumed(&h, &out->profile, err);
    } else {
        char *config = NULL;
        size_t config_len = 0;
        st = read_text(&h, k, out, &config, &config_len, err);
        if (st == OD_OK && out->file_kind == OD_FILE_CONFIG) {
            od_error me;
            od_error_clear(&me);
            out->have_model = od_hfconfig_parse(config, config_len, &out->model, &me) == OD_OK;
            if (!out->have_model)
                snprintf(out->model_error, sizeof out->model_error, "%s", me.msg);
        }
        free(config);
        if (st == OD_OK && out->series &&
            od_trend_analyze(out->series, od_series_primary(out->series), 0, &out->fit, NULL) == OD_OK)
            out->have_fit = 1;
    }
    if (st != OD_OK) {
        od_loaded_free(out);
        return st;
    }
    out->kind = diag_kind(out->file_kind);
    /* a BFC log without an OOM report is read for its figures alone */
    if (out->file_kind == OD_FILE_BFC_LOG && (!out->triage || !out->triage->n_reports))
        out->kind = OD_INPUT_PROFILE;
    return OD_OK;
}

void od_loaded_free(od_loaded *l)
{
    if (!l)
        return;
    od_triage_free(l->triage);
    od_series_free(l->series);
    od_snapshot_free(l->snapshot);
    od_profile_free(l->profile);
    const char *name = l->name;
    memset(l, 0, sizeof *l);
    l->name = name;
}
