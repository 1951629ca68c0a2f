/* profin.c - profiler records for doctor and report (see profin.h). */
#include "profin.h"

#include <stdio.h>

#include "oomdoc/input.h"
#include "output.h"

od_profile *od_cli_load_profile(const char *path, const char *text, size_t len, int *exit_code)
{
    od_error err;
    od_error_clear(&err);
    FILE *f = NULL;
    od_input *src = NULL;
    od_profile *p = NULL;
    od_status st;
    if (text) {
        st = od_input_open_memory(text, len, &src, &err);
    } else {
        f = od_cli_open(path, exit_code);
        if (!f)
            return NULL;
        st = od_input_open_file(f, &src, &err);
        if (!st)
            od_cli_progress_input(src, path, "reading", od_cli_file_size(f));
    }
    if (!st)
        st = od_profile_load(src, &p, &err);
    od_input_close(src);
    if (f)
        od_cli_close(f);
    if (st) {
        *exit_code = od_cli_report_error(path, &err);
        return NULL;
    }
    return p;
}
