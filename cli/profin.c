/* profin.c - profiler records for doctor and report (see profin.h). */
#include "profin.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "../lib/input.h"
#include "output.h"

od_file_kind od_cli_sniff_kind(const char *path, unsigned *flags)
{
    *flags = 0;
    if (strcmp(path, "-") == 0)
        return OD_FILE_UNDECIDED;
    /* Only a regular file is sniffed: a FIFO's bytes would be gone for the real read, and
     * opening one without a writer would wait. */
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return OD_FILE_UNDECIDED;
    FILE *f = fopen(path, "rb");
    if (!f)
        return OD_FILE_UNDECIDED;
    od_input *in = NULL;
    od_error err;
    char head[OD_FILE_HEAD_BYTES];
    size_t n = 0, got;
    if (od_input_open_file(f, &in, &err) == OD_OK) {
        while (n < sizeof head && (got = od_input_read(in, head + n, sizeof head - n)) > 0)
            n += got;
        if (od_input_is_gzip(in))
            *flags = OD_DETECT_GZIP;
    }
    od_input_close(in);
    fclose(f);
    od_file_kind k = OD_FILE_UNDECIDED;
    if (n)
        od_file_kind_detect(head, n, OD_DETECT_HEAD, &k, &err); /* cannot fail on a head */
    return k;
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
