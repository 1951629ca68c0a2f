/* inputs.c - command-line inputs through the library's loader (see inputs.h). */
#include "inputs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "oomdoc/input.h"
#include "output.h"

/* The second pass over a regular file: opened again by name. */
typedef struct {
    const char *path;
    FILE *f;
} again_ctx;

static od_input *reopen(void *ctx, od_error *err)
{
    again_ctx *a = ctx;
    int rc = 0;
    od_input *in = NULL;
    if (!(a->f = od_cli_open(a->path, &rc))) {
        od_fail(err, OD_ERR_IO, "cannot open it again");
        return NULL;
    }
    if (od_input_open_file(a->f, &in, err) != OD_OK) {
        od_cli_close(a->f);
        a->f = NULL;
        return NULL;
    }
    od_cli_progress_input(in, a->path, "reading", od_cli_file_size(a->f));
    return in;
}

static void reclose(void *ctx, od_input *in)
{
    again_ctx *a = ctx;
    od_input_close(in);
    od_cli_close(a->f);
    a->f = NULL;
}

/* Load one input. Returns 0 or an exit code (error printed). */
static int load_one(const char *path, od_loaded *l)
{
    int rc = 0;
    FILE *f = od_cli_open(path, &rc);
    if (!f)
        return rc;
    struct stat st;
    int regular = strcmp(path, "-") != 0 && fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode);
    od_error err;
    od_error_clear(&err);
    od_input *in = NULL;
    od_status s = od_input_open_file(f, &in, &err);
    if (s == OD_OK) {
        od_cli_progress_input(in, path, "reading", od_cli_file_size(f));
        again_ctx ctx = {path, NULL};
        od_reopener again = {reopen, reclose, &ctx};
        l->name = od_cli_input_name(path);
        s = od_load(in, regular ? &again : NULL, l, &err);
    }
    od_input_close(in);
    od_cli_close(f);
    od_cli_progress_done();
    return s == OD_OK ? 0 : od_cli_report_error(path, &err);
}

int od_cli_load_inputs(char *const *paths, size_t n, od_loaded **out)
{
    *out = NULL;
    od_loaded *ins = calloc(n ? n : 1, sizeof *ins);
    if (!ins) {
        fprintf(stderr, "oomdoc: out of memory\n");
        return OD_EXIT_INTERNAL;
    }
    for (size_t i = 0; i < n; i++) {
        int rc = load_one(paths[i], &ins[i]);
        if (rc) {
            od_cli_inputs_free(ins, n);
            return rc;
        }
    }
    *out = ins;
    return 0;
}

void od_cli_inputs_free(od_loaded *ins, size_t n)
{
    for (size_t i = 0; ins && i < n; i++)
        od_loaded_free(&ins[i]);
    free(ins);
}
