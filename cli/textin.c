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
    od_headed h;
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
    if (od_headed_take(t->in, &t->h, &err) != OD_OK) {
        *exit_code = od_cli_report_error(path, &err);
        od_cli_text_close(t);
        return NULL;
    }
    return t;
}

int od_cli_text_each(od_cli_text *t, od_chunk_fn fn, void *ctx)
{
    assert(!t->fed);
    t->fed = 1;
    od_error err;
    od_error_clear(&err);
    if (od_headed_each(&t->h, fn, ctx, &err) != OD_OK)
        return od_cli_report_error(t->path, &err);
    return 0;
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
