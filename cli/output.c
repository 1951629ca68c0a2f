/* output.c - shared CLI plumbing: exit codes, error lines, colour, JSON, progress. */
#include "output.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../lib/units.h"

const char *od_c_bold = "", *od_c_red = "", *od_c_yellow = "", *od_c_green = "",
           *od_c_dim = "", *od_c_reset = "";

int od_cli_exit_code(od_status status)
{
    switch (status) {
    case OD_OK: return OD_EXIT_OK;
    case OD_ERR_FORMAT:
    case OD_ERR_REFUSED:
    case OD_ERR_IO:
    case OD_ERR_LIMIT: return OD_EXIT_INPUT;
    case OD_ERR_ARG: return OD_EXIT_USAGE;
    case OD_ERR_NODEV: return OD_EXIT_NODEV;
    case OD_ERR_NOMEM:
    case OD_ERR_INTERNAL: return OD_EXIT_INTERNAL;
    }
    return OD_EXIT_INTERNAL;
}

int od_cli_report_error(const char *file, const od_error *err)
{
    fputs("oomdoc: ", stderr);
    if (file)
        fprintf(stderr, "%s: ", strcmp(file, "-") == 0 ? "<stdin>" : file);
    if (err->has_offset)
        fprintf(stderr, "byte %llu: ", (unsigned long long)err->offset);
    fprintf(stderr, "%s\n", err->msg[0] ? err->msg : od_status_name(err->status));
    return od_cli_exit_code(err->status);
}

int od_cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "oomdoc: %s%s", cmd ? cmd : "", cmd ? ": " : "");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry 'oomdoc %s%s--help'.\n", cmd ? cmd : "", cmd ? " " : "");
    return OD_EXIT_USAGE;
}

int od_cli_color(FILE *f)
{
    const char *no = getenv("NO_COLOR");
    const char *term = getenv("TERM");
    if (no && no[0])
        return 0;
    if (term && strcmp(term, "dumb") == 0)
        return 0;
    return isatty(fileno(f));
}

void od_cli_color_init(void)
{
    if (!od_cli_color(stdout))
        return;
    od_c_bold = "\033[1m";
    od_c_red = "\033[31m";
    od_c_yellow = "\033[33m";
    od_c_green = "\033[32m";
    od_c_dim = "\033[2m";
    od_c_reset = "\033[0m";
}

int od_cli_print_json(json_t *doc)
{
    int rc = json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(doc);
    if (rc != 0 || fputc('\n', stdout) == EOF) {
        fprintf(stderr, "oomdoc: cannot write JSON output\n");
        return OD_EXIT_INTERNAL;
    }
    return OD_EXIT_OK;
}

static int progress_shown;

void od_cli_progress(const char *what, double fraction)
{
    if (!isatty(fileno(stderr)))
        return;
    if (fraction < 0)
        fraction = 0;
    if (fraction > 1)
        fraction = 1;
    fprintf(stderr, "\r%s %3d%%", what, (int)(fraction * 100.0));
    fflush(stderr);
    progress_shown = 1;
}

void od_cli_progress_done(void)
{
    if (progress_shown) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
        progress_shown = 0;
    }
}

FILE *od_cli_open(const char *path, int *exit_code)
{
    if (strcmp(path, "-") == 0)
        return stdin;
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "oomdoc: %s: cannot open: %s\n", path, strerror(errno));
        *exit_code = OD_EXIT_INPUT;
        return NULL;
    }
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        fclose(f);
        fprintf(stderr, "oomdoc: %s: is a directory, expected a file\n", path);
        *exit_code = OD_EXIT_INPUT;
        return NULL;
    }
    return f;
}

void od_cli_close(FILE *f)
{
    if (f && f != stdin)
        fclose(f);
}

int od_cli_parse_size_opt(const char *cmd, const char *opt, const char *text, uint64_t *out)
{
    od_error err;
    if (od_parse_size(text, out, &err) != OD_OK)
        return od_cli_usage_error(cmd, "%s: %s", opt, err.msg);
    return 0;
}

int od_cli_parse_int_opt(const char *cmd, const char *opt, const char *text,
                         long min, long max, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end == text || *end || v < min || v > max)
        return od_cli_usage_error(cmd, "%s: '%s' is not an integer in %ld..%ld", opt, text, min, max);
    *out = v;
    return 0;
}
