/* snapin.c - loading a snapshot named on the command line. */
#include "snapin.h"

#include <string.h>

#include "oomdoc/input.h"
#include "read/tracepass.h"
#include "output.h"

od_snapshot *od_cli_load_snapshot(const char *path, int *exit_code)
{
    FILE *f = od_cli_open(path, exit_code);
    if (!f)
        return NULL;
    od_input *in = NULL;
    od_snapshot *snap = NULL;
    od_error err;
    od_error_clear(&err);
    od_status st = od_input_open_file(f, &in, &err);
    if (st == OD_OK) {
        od_cli_progress_input(in, path, "reading", od_cli_file_size(f));
        st = od_snapshot_load(in, &snap, &err);
    }
    od_input_close(in);
    od_cli_close(f);
    if (st != OD_OK) {
        *exit_code = od_cli_report_error(path, &err);
        return NULL;
    }
    return snap;
}

int od_cli_load_streamed(const char *path, od_cli_streamed *out, int *exit_code)
{
    memset(out, 0, sizeof *out);
    out->f = od_cli_open(path, exit_code);
    if (!out->f)
        return 0;
    od_error err;
    od_error_clear(&err);
    od_status st = od_input_open_file(out->f, &out->in, &err);
    if (st == OD_OK) {
        od_cli_progress_input(out->in, path, "reading", od_cli_file_size(out->f));
        st = od_snapshot_load_streamed(out->in, &out->snap, &err);
    }
    if (st == OD_ERR_LIMIT && strcmp(path, "-") != 0 && fseeko(out->f, 0, SEEK_SET) == 0) {
        /* a pickle that refers back to a trace entry's values: whole, then */
        od_input_close(out->in);
        out->in = NULL;
        od_error_clear(&err);
        st = od_input_open_file(out->f, &out->in, &err);
        if (st == OD_OK)
            st = od_snapshot_load(out->in, &out->snap, &err);
    }
    if (st != OD_OK) {
        *exit_code = od_cli_report_error(path, &err);
        od_cli_streamed_close(out);
        return 0;
    }
    return 1;
}

void od_cli_streamed_close(od_cli_streamed *s)
{
    od_snapshot_free(s->snap);
    od_input_close(s->in);
    if (s->f)
        od_cli_close(s->f);
    memset(s, 0, sizeof *s);
}
