/* textin.c - incremental text reading and OOM report wording shared by several commands. */
#include "textin.h"


#include <assert.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analyze/advice.h"
#include "analyze/diagnose.h"
#include "base/lines.h"
#include "base/mem.h"
#include "base/units.h"
#include "oomdoc/input.h"
#include "output.h"
#include "read/inputkind.h"
#include "render/triage_doc.h"

struct od_cli_text {
    const char *path;
    FILE *f;
    od_input *in;
    int regular;
    unsigned char head[OD_FILE_HEAD_BYTES];
    size_t head_len;
    const unsigned char *pending; /* the rest of the chunk the head was cut from */
    size_t pending_len;
    int fed;                      /* od_cli_text_each or _slurp ran: the stream is spent */
};

od_cli_text *od_cli_text_open(const char *path, int *exit_code)
{
    od_cli_text *t = calloc(1, sizeof *t);
    if (!t) {
        fprintf(stderr, "oomdoc: %s: out of memory\n", path);
        *exit_code = OD_EXIT_INTERNAL;
        return NULL;
    }
    t->path = path;
    if (!(t->f = od_cli_open(path, exit_code))) {
        free(t);
        return NULL;
    }
    struct stat st;
    t->regular = strcmp(path, "-") != 0 && fstat(fileno(t->f), &st) == 0 && S_ISREG(st.st_mode);
    od_error err;
    od_error_clear(&err);
    if (od_input_open_file(t->f, &t->in, &err) != OD_OK) {
        *exit_code = od_cli_report_error(path, &err);
        od_cli_text_close(t);
        return NULL;
    }
    od_cli_progress_input(t->in, path, "reading", od_cli_file_size(t->f));
    while (t->head_len < sizeof t->head) {
        const unsigned char *d;
        size_t n = od_input_borrow(t->in, &d);
        if (n == 0)
            break;
        size_t k = n < sizeof t->head - t->head_len ? n : sizeof t->head - t->head_len;
        memcpy(t->head + t->head_len, d, k);
        t->head_len += k;
        t->pending = d + k;
        t->pending_len = n - k;
    }
    if (od_input_error(t->in, &err) != OD_OK) {
        *exit_code = od_cli_report_error(path, &err);
        od_cli_text_close(t);
        return NULL;
    }
    return t;
}

od_file_kind od_cli_text_kind(const od_cli_text *t)
{
    od_file_kind k = OD_FILE_UNDECIDED;
    od_error err;
    unsigned flags = OD_DETECT_HEAD | (od_input_is_gzip(t->in) ? OD_DETECT_GZIP : 0);
    od_file_kind_detect(t->head, t->head_len, flags, &k, &err); /* cannot fail on a head */
    return k;
}

int od_cli_text_reopenable(const od_cli_text *t)
{
    return t->regular;
}

int od_cli_text_each(od_cli_text *t, od_cli_chunk_fn fn, void *ctx)
{
    assert(!t->fed);
    t->fed = 1;
    if (t->head_len && fn(ctx, t->head, t->head_len))
        return 0;
    if (t->pending_len && fn(ctx, t->pending, t->pending_len))
        return 0;
    for (;;) {
        const unsigned char *d;
        size_t n = od_input_borrow(t->in, &d);
        if (n == 0)
            break;
        if (fn(ctx, d, n))
            return 0;
    }
    od_error err;
    od_error_clear(&err);
    if (od_input_error(t->in, &err) != OD_OK)
        return od_cli_report_error(t->path, &err);
    return 0;
}

typedef struct {
    char *buf;
    size_t len, cap;
    od_lines lines; /* only to apply the line-break rule */
    od_error err;
    int failed;     /* 1: the rule, 2: out of memory */
} slurp;

static int no_line(void *ctx, const char *line, size_t len, uint64_t offset)
{
    (void)ctx, (void)line, (void)len, (void)offset;
    return 0;
}

static int slurp_chunk(void *ctx, const void *data, size_t n)
{
    slurp *s = ctx;
    /* od_lines keeps only the unfinished line: it is here for the line-break rule */
    if (od_lines_feed(&s->lines, data, n, no_line, NULL, &s->err) != OD_OK) {
        s->failed = 1;
        return 1;
    }
    if (!od_grow((void **)&s->buf, &s->cap, s->len + n + 1, 1)) {
        s->failed = 2;
        return 1;
    }
    memcpy(s->buf + s->len, data, n);
    s->len += n;
    return 0;
}

od_snapshot *od_cli_text_load_snapshot(od_cli_text *t, int *exit_code)
{
    assert(!t->fed);
    t->fed = 1;
    od_input *in = NULL;
    od_snapshot *snap = NULL;
    od_error err;
    od_error_clear(&err);
    od_status st = od_input_open_resumed(t->head, t->head_len, t->pending, t->pending_len, t->in, &in, &err);
    if (st == OD_OK)
        st = od_snapshot_load(in, &snap, &err);
    od_input_close(in);
    if (st != OD_OK) {
        *exit_code = od_cli_report_error(t->path, &err);
        return NULL;
    }
    return snap;
}

char *od_cli_text_slurp(od_cli_text *t, size_t *len, int *exit_code)
{
    slurp s;
    memset(&s, 0, sizeof s);
    od_lines_init(&s.lines);
    int rc = od_cli_text_each(t, slurp_chunk, &s);
    od_lines_free(&s.lines);
    if (!rc && s.failed == 1)
        rc = od_cli_report_error(t->path, &s.err);
    if (!rc && s.failed == 2) {
        fprintf(stderr, "oomdoc: %s: out of memory\n", od_cli_input_shown(t->path));
        rc = OD_EXIT_INTERNAL;
    }
    if (!rc && !s.buf && !(s.buf = malloc(1))) {
        fprintf(stderr, "oomdoc: %s: out of memory\n", od_cli_input_shown(t->path));
        rc = OD_EXIT_INTERNAL;
    }
    if (rc) {
        free(s.buf);
        *exit_code = rc;
        return NULL;
    }
    s.buf[s.len] = '\0';
    *len = s.len;
    return s.buf;
}

void od_cli_text_close(od_cli_text *t)
{
    if (!t)
        return;
    od_input_close(t->in);
    if (t->f)
        od_cli_close(t->f);
    free(t);
}

char *od_cli_read_all(const char *path, size_t *len, int *exit_code)
{
    od_cli_text *t = od_cli_text_open(path, exit_code);
    if (!t)
        return NULL;
    char *text = od_cli_text_slurp(t, len, exit_code);
    od_cli_text_close(t);
    return text;
}

/* od_cli_text_each's consumer: stops at the stream's first (final) failure. */
static int feed_triage(void *ctx, const void *data, size_t n)
{
    return od_triage_stream_feed(ctx, data, n, NULL) != OD_OK;
}

int od_cli_triage_text(const char *path, od_triage **out)
{
    int rc = 0;
    *out = NULL;
    od_error err;
    od_error_clear(&err);
    od_triage_stream *ts = NULL;
    if (od_triage_stream_new(&ts, &err) != OD_OK)
        return od_cli_report_error(path, &err);
    od_cli_text *t = od_cli_text_open(path, &rc);
    if (t) {
        rc = od_cli_text_each(t, feed_triage, ts);
        od_cli_text_close(t);
        if (!rc && od_triage_stream_finish(ts, out, &err) != OD_OK)
            rc = od_cli_report_error(path, &err);
    }
    od_triage_stream_free(ts);
    return rc;
}

typedef struct {
    od_series_parser *sp;  /* NULL once the input cannot be a series */
    od_triage_stream *ts;
    char *text;
    size_t len, cap;
    int keep;              /* 1: the text may be a config.json (it opens with '{') and is short
                              enough to keep; 0: not kept; -1: only white space so far */
    int nomem;
} text_pass;

static int feed_pass(void *ctx, const void *data, size_t n)
{
    text_pass *p = ctx;
    if (p->sp && od_series_feed(p->sp, data, n, NULL) != OD_OK) {
        od_series_parser_free(p->sp); /* final: not a series (or out of memory, told below) */
        p->sp = NULL;
    }
    if (od_triage_stream_feed(p->ts, data, n, NULL) != OD_OK)
        return 1;
    for (size_t i = 0; p->keep < 0 && i < n; i++)
        if (!isspace(((const unsigned char *)data)[i]))
            p->keep = ((const char *)data)[i] == '{';
    if (!p->keep && p->text) {
        free(p->text);
        p->text = NULL;
        p->len = p->cap = 0;
    }
    if (p->keep && p->len + n > OD_CLI_KEEP_TEXT) {
        p->keep = 0;
        free(p->text);
        p->text = NULL;
        p->len = p->cap = 0;
    }
    if (p->keep && !od_grow((void **)&p->text, &p->cap, p->len + n + 1, 1)) {
        p->nomem = 1;
        return 1;
    }
    if (p->keep) {
        memcpy(p->text + p->len, data, n);
        p->len += n;
    }
    return 0;
}

int od_cli_text_read(od_cli_text *t, od_file_kind head_kind, od_cli_textin *r)
{
    memset(r, 0, sizeof *r);
    od_error err;
    od_error_clear(&err);
    text_pass p = {.keep = -1};
    int rc = 0;
    if ((head_kind != OD_FILE_BFC_LOG && od_series_parser_new(&p.sp, &err) != OD_OK) ||
        od_triage_stream_new(&p.ts, &err) != OD_OK) {
        rc = od_cli_report_error(t->path, &err);
        goto out;
    }
    if ((rc = od_cli_text_each(t, feed_pass, &p)) != 0)
        goto out;
    if (od_triage_stream_feed(p.ts, NULL, 0, &err) != OD_OK) { /* what stopped the reading */
        rc = od_cli_report_error(t->path, &err);
        goto out;
    }
    if (p.nomem) {
        fprintf(stderr, "oomdoc: %s: out of memory\n", od_cli_input_shown(t->path));
        rc = OD_EXIT_INTERNAL;
        goto out;
    }
    od_status series_st = OD_ERR_FORMAT;
    if (p.sp && (series_st = od_series_finish(p.sp, &r->series, &err)) == OD_ERR_NOMEM) {
        rc = od_cli_report_error(t->path, &err);
        goto out;
    }
    if (od_triage_stream_finish(p.ts, &r->triage, &err) != OD_OK) {
        rc = od_cli_report_error(t->path, &err);
        goto out;
    }
    if (p.keep) {
        r->text = p.text ? p.text : calloc(1, 1);
        r->len = p.len;
        p.text = NULL;
        if (!r->text) {
            fprintf(stderr, "oomdoc: %s: out of memory\n", od_cli_input_shown(t->path));
            rc = OD_EXIT_INTERNAL;
            goto out;
        }
        r->text[r->len] = '\0';
    }
    r->kind = head_kind == OD_FILE_BFC_LOG ? OD_FILE_BFC_LOG
                                           : od_file_kind_settle(r->text, r->len, series_st, r->triage);
    if (r->kind != OD_FILE_SERIES) {
        od_series_free(r->series);
        r->series = NULL;
    }
    if (r->kind != OD_FILE_LOG && r->kind != OD_FILE_BFC_LOG) {
        od_triage_free(r->triage);
        r->triage = NULL;
    }
out:
    od_series_parser_free(p.sp);
    od_triage_stream_free(p.ts);
    free(p.text);
    if (rc)
        od_cli_textin_free(r);
    return rc;
}

void od_cli_textin_free(od_cli_textin *r)
{
    od_series_free(r->series);
    od_triage_free(r->triage);
    free(r->text);
    memset(r, 0, sizeof *r);
}

const char *od_cli_request_note(const od_oom_report *r)
{
    return od_oom_request_note(r);
}

void od_cli_oom_reason(const od_oom_report *r, char *buf, size_t size)
{
    od_triage_report_reason(r, buf, size);
}

json_t *od_cli_oom_json(const od_oom_report *r)
{
    return od_triage_report_json(r);
}
