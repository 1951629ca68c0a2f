/* output.c - shared CLI plumbing: exit codes, error lines, colour, JSON, progress. */
#include "output.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/units.h"
#include "oomdoc/input.h"

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
        fprintf(stderr, "%s: ", od_cli_input_shown(file));
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
int od_cli_quiet;

void od_cli_progress(const char *what, double fraction)
{
    if (od_cli_quiet || !isatty(fileno(stderr)))
        return;
    if (fraction < 0)
        fraction = 0;
    if (fraction > 1)
        fraction = 1;
    fprintf(stderr, "\r%s %3d%%\033[K", what, (int)(fraction * 100.0));
    fflush(stderr);
    progress_shown = 1;
}

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The read being shown (the CLI reads one input at a time). */
static struct {
    double t0, last_s;
    uint64_t total_bytes; /* 0: unknown (a pipe) */
    char name[128];
    const char *what;
} reading;

static void on_input_progress(void *ctx, uint64_t consumed_bytes, int done)
{
    (void)ctx;
    if (done) {
        od_cli_progress_done();
        return;
    }
    double now = mono_s(), elapsed = now - reading.t0;
    if (elapsed < 1.0 || now - reading.last_s < 0.1)
        return;
    reading.last_s = now;
    char a[32], b[32], left[48] = "";
    od_format_iec(consumed_bytes, a, sizeof a);
    if (reading.total_bytes && consumed_bytes && consumed_bytes <= reading.total_bytes) {
        double frac = (double)consumed_bytes / (double)reading.total_bytes;
        double eta = elapsed * (1 - frac) / frac;
        snprintf(left, sizeof left, " (%d%%), about %.0f s left", (int)(frac * 100), eta);
        fprintf(stderr, "\roomdoc: %s %s: %s of %s%s\033[K", reading.what, reading.name, a,
                od_format_iec(reading.total_bytes, b, sizeof b), left);
    } else {
        fprintf(stderr, "\roomdoc: %s %s: %s\033[K", reading.what, reading.name, a);
    }
    fflush(stderr);
    progress_shown = 1;
}

uint64_t od_cli_file_size(FILE *f)
{
    struct stat st;
    return f && fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
}

void od_cli_progress_input(struct od_input *in, const char *path, const char *what, uint64_t total_bytes)
{
    if (!in || od_cli_quiet || !isatty(fileno(stderr)))
        return;
    reading.total_bytes = total_bytes;
    reading.t0 = mono_s();
    reading.last_s = 0;
    reading.what = what;
    snprintf(reading.name, sizeof reading.name, "%s", od_cli_input_shown(path));
    od_input_set_progress(in, on_input_progress, NULL);
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
    /* O_NONBLOCK: opening a FIFO that has no writer must not wait for one. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    const char *what = NULL;
    if (fd < 0) {
        fprintf(stderr, "oomdoc: %s: cannot open: %s\n", od_cli_name(path), strerror(errno));
        *exit_code = OD_EXIT_INPUT;
        return NULL;
    }
    if (fstat(fd, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            what = "is a directory, expected a file";
        else if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode))
            what = "is a device, expected a file (to read a stream, give - and redirect it to stdin)";
        else if (S_ISSOCK(st.st_mode))
            what = "is a socket, expected a file";
    }
    /* Reads block again: a pipe's writer that is gone (or never came) reads as the end
     * of the input, one that is there is waited for as on stdin. */
    if (!what && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0)
        what = "cannot be read";
    FILE *f = what ? NULL : fdopen(fd, "rb");
    if (!f) {
        close(fd);
        fprintf(stderr, "oomdoc: %s: %s\n", od_cli_name(path), what ? what : strerror(errno));
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

const char *od_cli_input_name(const char *path)
{
    return strcmp(path, "-") == 0 ? "<stdin>" : path;
}

const char *od_cli_input_shown(const char *path)
{
    return od_cli_name(od_cli_input_name(path));
}

const char *od_cli_name(const char *name)
{
    static _Thread_local char bufs[4][1024];
    static _Thread_local unsigned next;
    char *b = bufs[next++ % 4];
    size_t k = 0, cap = sizeof bufs[0];
    if (!name)
        return "(null)";
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
        char esc[8];
        int n;
        unsigned c = *p;
        if (c == '\n')
            n = snprintf(esc, sizeof esc, "\\n");
        else if (c == '\t')
            n = snprintf(esc, sizeof esc, "\\t");
        else if (c == '\r')
            n = snprintf(esc, sizeof esc, "\\r");
        else if (c == 0x1b)
            n = snprintf(esc, sizeof esc, "\\e");
        else if (c == '\\')
            n = snprintf(esc, sizeof esc, "\\\\");
        else if (c < 0x20 || c == 0x7f)
            n = snprintf(esc, sizeof esc, "\\x%02x", c);
        else
            esc[0] = (char)c, esc[1] = 0, n = 1;
        if (k + (size_t)n + 4 > cap) {
            memcpy(b + k, "...", 4);
            return b;
        }
        memcpy(b + k, esc, (size_t)n);
        k += (size_t)n;
    }
    b[k] = 0;
    return b;
}

int od_cli_safe_open(od_safe_file *sf, const char *path)
{
    memset(sf, 0, sizeof *sf);
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    size_t dlen = slash ? (size_t)(slash - path) + 1 : 0;
    struct stat st;
    int e = 0;
    if (!*base) {
        e = EISDIR;
        goto fail;
    }
    /* A directory there would make rename fail late: say so now. */
    if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        e = EISDIR;
        goto fail;
    }
    if (!(sf->path = strdup(path))) {
        e = ENOMEM;
        goto fail;
    }
    /* A stream (/dev/stdout, /dev/null, a FIFO, a terminal) is written to, not replaced;
     * a FIFO nobody reads is an error rather than a wait. */
    if (strncmp(path, "/dev/", 5) == 0 || strncmp(path, "/proc/", 6) == 0 ||
        (stat(path, &st) == 0 && !S_ISREG(st.st_mode))) {
        int sfd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
        if (sfd < 0 || fcntl(sfd, F_SETFL, fcntl(sfd, F_GETFL) & ~O_NONBLOCK) != 0 ||
            !(sf->f = fdopen(sfd, "w"))) {
            e = errno;
            if (sfd >= 0)
                close(sfd);
            goto fail;
        }
        return 0;
    }
    sf->tmp = malloc(dlen + strlen(base) + 16);
    if (!sf->tmp) {
        e = ENOMEM;
        goto fail;
    }
    memcpy(sf->tmp, path, dlen);
    snprintf(sf->tmp + dlen, strlen(base) + 16, ".%s.XXXXXX", base);
    int fd = mkstemp(sf->tmp); /* O_CREAT | O_EXCL, mode 0600 */
    if (fd < 0) {
        e = errno;
        free(sf->tmp);
        sf->tmp = NULL;
        goto fail;
    }
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    /* The mode an ordinary create would give, or the replaced file's own. */
    mode_t mask = umask(022);
    umask(mask);
    mode_t mode = 0666 & ~mask;
    if (lstat(path, &st) == 0 && S_ISREG(st.st_mode))
        mode = st.st_mode & 07777;
    fchmod(fd, mode);
    sf->f = fdopen(fd, "w");
    if (!sf->f) {
        e = errno;
        close(fd);
        goto fail;
    }
    return 0;
fail:
    fprintf(stderr, "oomdoc: %s: cannot write: %s\n", od_cli_name(path),
            e == ENXIO ? "a FIFO that nothing reads" : strerror(e));
    od_cli_safe_abort(sf);
    return OD_EXIT_INPUT;
}

void od_cli_safe_abort(od_safe_file *sf)
{
    if (sf->f)
        fclose(sf->f);
    if (sf->tmp)
        unlink(sf->tmp);
    free(sf->tmp);
    free(sf->path);
    memset(sf, 0, sizeof *sf);
}

int od_cli_safe_commit(od_safe_file *sf)
{
    int e = 0;
    if (!sf->tmp) { /* a stream: nothing to rename */
        if (fflush(sf->f) != 0 || ferror(sf->f))
            e = errno ? errno : EIO;
        if (fclose(sf->f) != 0 && !e)
            e = errno;
        sf->f = NULL;
        if (e)
            fprintf(stderr, "oomdoc: %s: cannot write: %s\n", od_cli_name(sf->path), strerror(e));
        od_cli_safe_abort(sf);
        return e ? OD_EXIT_INPUT : 0;
    }
    if (fflush(sf->f) != 0 || ferror(sf->f))
        e = errno ? errno : EIO;
    else if (fsync(fileno(sf->f)) != 0 && errno != EINVAL)
        e = errno;
    int cr = fclose(sf->f);
    sf->f = NULL;
    if (!e && cr != 0)
        e = errno;
    if (!e && rename(sf->tmp, sf->path) != 0)
        e = errno;
    if (e) {
        fprintf(stderr, "oomdoc: %s: cannot write: %s (the old file is left as it was)\n",
                od_cli_name(sf->path), strerror(e));
        od_cli_safe_abort(sf);
        return OD_EXIT_INPUT;
    }
    /* The rename itself reaches the disk with the directory. */
    const char *slash = strrchr(sf->path, '/');
    if (slash)
        sf->path[slash - sf->path + (slash == sf->path)] = 0;
    int dfd = open(slash ? sf->path : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    free(sf->tmp);
    free(sf->path);
    memset(sf, 0, sizeof *sf);
    return 0;
}

int od_cli_safe_publish(od_safe_file *sf)
{
    if (fflush(sf->f) != 0 || (sf->tmp && rename(sf->tmp, sf->path) != 0)) {
        fprintf(stderr, "oomdoc: %s: cannot write: %s (the old file is left as it was)\n",
                od_cli_name(sf->path), strerror(errno));
        od_cli_safe_abort(sf);
        return OD_EXIT_INPUT;
    }
    free(sf->tmp);
    free(sf->path);
    memset(sf, 0, sizeof *sf); /* the FILE is the caller's now */
    return 0;
}

int od_cli_unknown_option(const char *cmd, const char *shortopts, const struct option *longopts, char *const argv[])
{
    /* getopt_long leaves optind past the previous argument while it is inside a cluster, so
     * the argument before optind is the long option only when its name (or the prefix of it
     * getopt_long accepts) has optopt's code. */
    const char *a = argv[optind - 1];
    size_t n = strcspn(a, "=");
    const struct option *lo = NULL;
    for (const struct option *o = longopts; optopt && a[0] == '-' && a[1] == '-' && o->name && !lo; o++)
        if (o->val == optopt && n > 2 && n - 2 <= strlen(o->name) && strncmp(a + 2, o->name, n - 2) == 0)
            lo = o;
    if (lo && a[n] == '=' && lo->has_arg == no_argument)
        return od_cli_usage_error(cmd, "%.*s takes no value", (int)n, a);
    if (lo)
        return od_cli_usage_error(cmd, "%.*s needs a value", (int)n, a);
    if (optopt && optopt != ':' && strchr(shortopts, optopt))
        return od_cli_usage_error(cmd, "-%c needs a value", optopt);
    if (optopt)
        return od_cli_usage_error(cmd, "unknown option '-%c'", optopt);
    return od_cli_usage_error(cmd, "unknown option '%.*s'", (int)n, a);
}
