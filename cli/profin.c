/* profin.c - profiler records for doctor and report (see profin.h). */
#include "profin.h"

#include <stdio.h>
#include <string.h>

#include "../lib/input.h"
#include "output.h"

int od_cli_profile_kind(const char *path)
{
    if (strcmp(path, "-") == 0)
        return -1;
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    od_input *in = NULL;
    od_error err;
    char head[4096];
    size_t n = 0, got;
    if (od_input_open_file(f, &in, &err) == OD_OK)
        while (n < sizeof head && (got = od_input_read(in, head + n, sizeof head - n)) > 0)
            n += got;
    od_input_close(in);
    fclose(f);
    return n ? od_profile_detect(head, n) : -1;
}

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
