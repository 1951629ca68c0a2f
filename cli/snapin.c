/* snapin.c - loading a snapshot named on the command line. */
#include "snapin.h"

#include <string.h>

#include "oomdoc/input.h"
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
