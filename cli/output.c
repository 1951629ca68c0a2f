/* output.c - shared CLI plumbing: exit codes, error lines, colour, JSON, progress, safe
 * writes, and text on stdout (wrapped to the terminal, untrusted strings escaped). */
#define _GNU_SOURCE /* fopencookie: the wrapping writer and the safe writer's error record */
#include "output.h"

#include "render/jsonstr.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/textsafe.h"
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
    /* A message may quote the input (a parser's "got ..."): its bytes are escaped too. */
    char msg[sizeof err->msg * 4];
    const char *m = err->msg[0] ? err->msg : od_status_name(err->status);
    od_text_escape(m, strlen(m), 0, msg, sizeof msg);
    fprintf(stderr, "%s\n", msg);
    return od_cli_exit_code(err->status);
}

int od_cli_usage_error(const char *cmd, const char *fmt, ...)
{
    /* The message quotes what was typed ('%s' of an argument): shown escaped, one line. */
    char msg[1024], shown[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    od_text_escape(msg, strlen(msg), 0, shown, sizeof shown);
    fprintf(stderr, "oomdoc: %s%s%s\nTry 'oomdoc %s%s--help'.\n", cmd ? cmd : "", cmd ? ": " : "", shown,
            cmd ? cmd : "", cmd ? " " : "");
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
    if (f == stdout)
        return od_cli_stdout_tty();
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
    FILE *out = od_cli_raw_stdout(); /* a document is never wrapped, even on a terminal */
    int rc = json_dumpf(doc, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(doc);
    if (rc != 0 || fputc('\n', out) == EOF) {
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
    if (!name)
        return "(null)";
    size_t need = od_text_escape(name, strlen(name), OD_ESC_BACKSLASH, b, sizeof bufs[0] - 3);
    if (need >= sizeof bufs[0] - 3)
        strcat(b, "...");
    return b;
}

/* ---- safe writes ---------------------------------------------------------------------- */

/* What a safe file's writes met: the FILE is a cookie stream over fd, so the first
 * write error (ENOSPC, EFBIG, EIO) is kept whatever the caller does before it asks. */
struct od_safe_sink {
    int fd;
    int err_no;
    uint64_t bytes;
};

static ssize_t sink_write(void *c, const char *buf, size_t n)
{
    od_safe_sink *k = c;
    size_t done = 0;
    while (done < n) {
        ssize_t w = write(k->fd, buf + done, n - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (!k->err_no)
                k->err_no = w < 0 ? errno : EIO;
            errno = k->err_no;
            return done ? (ssize_t)done : -1;
        }
        done += (size_t)w;
        k->bytes += (uint64_t)w;
    }
    return (ssize_t)n;
}

static int sink_close(void *c)
{
    od_safe_sink *k = c;
    int r = k->fd >= 0 ? close(k->fd) : 0;
    if (r != 0 && !k->err_no)
        k->err_no = errno;
    free(k);
    return r;
}

/* A FILE over fd that records its errors in *out (freed with the FILE). */
static FILE *sink_open(int fd, od_safe_sink **out)
{
    od_safe_sink *k = calloc(1, sizeof *k);
    if (!k)
        return NULL;
    k->fd = fd;
    cookie_io_functions_t io = {NULL, sink_write, NULL, sink_close};
    FILE *f = fopencookie(k, "w", io);
    if (!f) {
        free(k);
        return NULL;
    }
    *out = k;
    return f;
}

/* The temporaries a signal removes: paths in fixed slots, so the handler needs nothing
 * but unlink(). */
#define MAX_TEMPS 16
static char temp_paths[MAX_TEMPS][PATH_MAX];
static volatile sig_atomic_t temp_used[MAX_TEMPS];
static const int cleanup_signals[] = {SIGINT, SIGTERM, SIGHUP};
static struct sigaction cleanup_old[3];
static int cleanup_installed;

static void on_cleanup_signal(int sig)
{
    for (int i = 0; i < MAX_TEMPS; i++)
        if (temp_used[i])
            unlink(temp_paths[i]);
    for (int i = 0; i < 3; i++)
        if (cleanup_signals[i] == sig)
            sigaction(sig, &cleanup_old[i], NULL);
    raise(sig);
}

/* Remember tmp for the handler; -1 when every slot is taken (it is then not removed by
 * a signal, only by the usual paths). */
static int temp_register(const char *tmp)
{
    if (strlen(tmp) >= PATH_MAX)
        return -1;
    if (!cleanup_installed) {
        /* Only where nobody else handles the signal (watch installs its own later, once
         * its series is published and no temporary is left). */
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_cleanup_signal;
        sigemptyset(&sa.sa_mask);
        for (int i = 0; i < 3; i++) {
            struct sigaction cur;
            if (sigaction(cleanup_signals[i], NULL, &cur) == 0 && cur.sa_handler == SIG_DFL &&
                !(cur.sa_flags & SA_SIGINFO))
                sigaction(cleanup_signals[i], &sa, &cleanup_old[i]);
            else
                cleanup_old[i] = cur;
        }
        cleanup_installed = 1;
    }
    for (int i = 0; i < MAX_TEMPS; i++)
        if (!temp_used[i]) {
            memcpy(temp_paths[i], tmp, strlen(tmp) + 1);
            temp_used[i] = 1;
            return i;
        }
    return -1;
}

static void temp_unregister(int slot)
{
    if (slot >= 0 && slot < MAX_TEMPS)
        temp_used[slot] = 0;
}

const char *od_cli_errno_text(int e)
{
    static _Thread_local char buf[160];
    const char *name = NULL;
    switch (e) {
    case ENOSPC: name = "ENOSPC"; break;
#ifdef EDQUOT
    case EDQUOT: name = "EDQUOT"; break;
#endif
    case EFBIG: name = "EFBIG"; break;
    case EROFS: name = "EROFS"; break;
    case EACCES: name = "EACCES"; break;
    case EPERM: name = "EPERM"; break;
    case EIO: name = "EIO"; break;
    case ENOENT: name = "ENOENT"; break;
    case EISDIR: name = "EISDIR"; break;
    case ENOTDIR: name = "ENOTDIR"; break;
    case EXDEV: name = "EXDEV"; break;
    case ENAMETOOLONG: name = "ENAMETOOLONG"; break;
    default: break;
    }
    if (name)
        snprintf(buf, sizeof buf, "%s (%s)", strerror(e), name);
    else
        snprintf(buf, sizeof buf, "%s", strerror(e));
    return buf;
}

static void write_error(const char *path, const char *why, int kept)
{
    fprintf(stderr, "oomdoc: %s: cannot write: %s%s\n", od_cli_name(path), why,
            kept ? "; the old file is left as it was" : "");
}

/* 1 when path is the file stdout is open on (/dev/stdout, /proc/self/fd/1, or the very
 * file a redirection opened). */
static int is_stdout(const char *path)
{
    struct stat a, b;
    return stat(path, &a) == 0 && fstat(STDOUT_FILENO, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

int od_cli_safe_open(od_safe_file *sf, const char *path)
{
    memset(sf, 0, sizeof *sf);
    sf->slot = -1;
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    size_t dlen = slash ? (size_t)(slash - path) + 1 : 0;
    struct stat st;
    int e = 0;
    const char *why = NULL;
    if (!*base) {
        e = EISDIR;
        goto fail;
    }
    if (!(sf->path = strdup(path))) {
        e = ENOMEM;
        goto fail;
    }
    /* stdout and /dev/null are written where they are; nothing else is opened in place. */
    if (is_stdout(path)) {
        fflush(stdout);
        sf->f = stdout;
        return 0;
    }
    if (strcmp(path, "/dev/null") == 0) {
        int nfd = open(path, O_WRONLY | O_CLOEXEC);
        if (nfd < 0 || !(sf->f = sink_open(nfd, &sf->sink))) {
            e = errno;
            if (nfd >= 0)
                close(nfd);
            goto fail;
        }
        return 0;
    }
    /* What is at the name itself (a link is replaced, whatever it points to). */
    if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
        why = S_ISDIR(st.st_mode)   ? "is a directory"
              : S_ISFIFO(st.st_mode) ? "is a FIFO: give - and a pipe, or a file"
              : S_ISSOCK(st.st_mode) ? "is a socket, expected a file"
                                     : "is a device, expected a file (- writes to stdout)";
        goto fail;
    }
    sf->tmp = malloc(dlen + strlen(base) + 16);
    if (!sf->tmp) {
        e = ENOMEM;
        goto fail;
    }
    memcpy(sf->tmp, path, dlen);
    snprintf(sf->tmp + dlen, strlen(base) + 16, ".%s.XXXXXX", base);
    /* The signals wait until the temporary is known to their handler: one that came
     * between the create and the registration would leave it behind. */
    sigset_t block, old;
    sigemptyset(&block);
    for (int i = 0; i < 3; i++)
        sigaddset(&block, cleanup_signals[i]);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    int fd = mkstemp(sf->tmp); /* O_CREAT | O_EXCL, mode 0600 */
    if (fd >= 0)
        sf->slot = temp_register(sf->tmp);
    e = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (fd < 0) {
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
    sf->f = sink_open(fd, &sf->sink);
    if (!sf->f) {
        e = errno ? errno : ENOMEM;
        close(fd);
        goto fail;
    }
    return 0;
fail:
    write_error(path, why ? why : od_cli_errno_text(e), 0);
    od_cli_safe_abort(sf);
    return OD_EXIT_INPUT;
}

void od_cli_safe_abort(od_safe_file *sf)
{
    if (sf->f && sf->f != stdout)
        fclose(sf->f);
    if (sf->tmp)
        unlink(sf->tmp);
    temp_unregister(sf->slot);
    free(sf->tmp);
    free(sf->path);
    memset(sf, 0, sizeof *sf);
    sf->slot = -1;
}

/* Flush sf->f and close it (not stdout); 0 or the first errno its writes met. With fsync:
 * the data reaches the disk before the rename makes it the file. */
static int flush_close(od_safe_file *sf, int sync)
{
    int e = 0;
    if (fflush(sf->f) != 0 || ferror(sf->f))
        e = sf->sink && sf->sink->err_no ? sf->sink->err_no : errno ? errno : EIO;
    if (sf->f == stdout) {
        sf->f = NULL;
        return e;
    }
    if (!e && sync && sf->sink && fsync(sf->sink->fd) != 0 && errno != EINVAL)
        e = errno;
    if (!e && sf->sink && sf->sink->err_no)
        e = sf->sink->err_no;
    int cr = fclose(sf->f); /* frees the sink */
    sf->f = NULL;
    sf->sink = NULL;
    if (!e && cr != 0)
        e = errno ? errno : EIO;
    return e;
}

int od_cli_safe_commit(od_safe_file *sf)
{
    if (!sf->tmp) { /* stdout or /dev/null: nothing to rename */
        int e = flush_close(sf, 0);
        if (e)
            write_error(sf->path, od_cli_errno_text(e), 0);
        od_cli_safe_abort(sf);
        return e ? OD_EXIT_INPUT : 0;
    }
    int e = flush_close(sf, 1);
    if (!e && rename(sf->tmp, sf->path) != 0)
        e = errno;
    if (e) {
        write_error(sf->path, od_cli_errno_text(e), 1);
        od_cli_safe_abort(sf);
        return OD_EXIT_INPUT;
    }
    temp_unregister(sf->slot);
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
    sf->slot = -1;
    return 0;
}

int od_cli_safe_commit_report(od_safe_file *sf)
{
    uint64_t bytes = sf->sink ? sf->sink->bytes : 0;
    int in_place = !sf->tmp;
    char *path = sf->path ? strdup(sf->path) : NULL;
    int rc = od_cli_safe_commit(sf);
    if (!rc && !in_place && path && !od_cli_quiet) {
        char b[32];
        fprintf(stderr, "wrote %s (%s)\n", od_cli_name(path), od_format_iec(bytes, b, sizeof b));
    }
    free(path);
    return rc;
}

int od_cli_safe_fail(od_safe_file *sf, const od_error *err)
{
    int code;
    if (sf->f)
        fflush(sf->f);
    int e = sf->sink ? sf->sink->err_no : 0;
    if (e) {
        write_error(sf->path, od_cli_errno_text(e), sf->tmp != NULL);
        code = OD_EXIT_INPUT;
    } else {
        code = od_cli_report_error(sf->path, err);
    }
    od_cli_safe_abort(sf);
    return code;
}

int od_cli_safe_publish(od_safe_file *sf)
{
    int e = 0;
    if (fflush(sf->f) != 0)
        e = sf->sink && sf->sink->err_no ? sf->sink->err_no : errno ? errno : EIO;
    if (!e && sf->tmp && rename(sf->tmp, sf->path) != 0)
        e = errno;
    if (e) {
        write_error(sf->path, od_cli_errno_text(e), sf->tmp != NULL);
        od_cli_safe_abort(sf);
        return OD_EXIT_INPUT;
    }
    temp_unregister(sf->slot);
    free(sf->tmp);
    free(sf->path);
    memset(sf, 0, sizeof *sf); /* the FILE is the caller's now */
    sf->slot = -1;
    return 0;
}

int od_cli_refuse_output_onto_input(const char *cmd, const char *opt, const char *out,
                                    char *const *inputs, size_t n_inputs)
{
    struct stat o, i;
    if (!out || strcmp(out, "-") == 0 || stat(out, &o) != 0 || !S_ISREG(o.st_mode))
        return 0;
    for (size_t k = 0; k < n_inputs; k++)
        if (strcmp(inputs[k], "-") != 0 && stat(inputs[k], &i) == 0 && i.st_dev == o.st_dev && i.st_ino == o.st_ino)
            return od_cli_usage_error(cmd, "%s %s is one of the inputs: it would be replaced by the output",
                                      opt, od_cli_name(out));
    return 0;
}

const char *od_cli_regular_file_problem(const char *path)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return strerror(errno);
    struct stat st;
    const char *why = NULL;
    if (fstat(fd, &st) != 0)
        why = strerror(errno);
    else if (S_ISDIR(st.st_mode))
        why = "is a directory, expected a file";
    else if (S_ISFIFO(st.st_mode))
        why = "is a FIFO, expected a file";
    else if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode))
        why = "is a device, expected a file";
    else if (S_ISSOCK(st.st_mode))
        why = "is a socket, expected a file";
    else if (!S_ISREG(st.st_mode))
        why = "is not a regular file";
    close(fd);
    return why;
}

/* ---- text on stdout ------------------------------------------------------------------- */

static struct {
    FILE *real;       /* the terminal's stdout, behind the wrapper */
    FILE *wrapper;
    size_t width;
    char *line, *out;
    size_t len, cap, out_cap;
    int tty;          /* -1: not asked yet */
} term = {NULL, NULL, 0, NULL, NULL, 0, 0, 0, -1};

static size_t terminal_columns(int fd)
{
    const char *c = getenv("COLUMNS");
    char *end;
    long v = c ? strtol(c, &end, 10) : 0;
    if (c && end != c && *end == 0 && v >= 1 && v <= 10000)
        return (size_t)v;
    struct winsize ws;
    if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
    return 80;
}

int od_cli_stdout_tty(void)
{
    if (term.wrapper && stdout == term.wrapper)
        return 1;
    int fd = fileno(stdout);
    return fd >= 0 && isatty(fd);
}

FILE *od_cli_raw_stdout(void)
{
    if (term.wrapper && stdout == term.wrapper) {
        fflush(stdout);
        return term.real;
    }
    return stdout;
}

size_t od_cli_term_width(void)
{
    if (term.wrapper && stdout == term.wrapper)
        return term.width = terminal_columns(fileno(term.real)); /* a resize is followed */
    return od_cli_stdout_tty() ? terminal_columns(fileno(stdout)) : 0;
}

/* One complete line (without its newline) to the terminal, wrapped. */
static void emit_line(const char *s, size_t n, int newline)
{
    size_t need = od_text_wrap(s, n, term.width, term.out, term.out_cap);
    if (need >= term.out_cap) {
        char *o = realloc(term.out, need + 1);
        if (!o) {
            fwrite(s, 1, n, term.real); /* unwrapped rather than lost */
            if (newline)
                fputc('\n', term.real);
            return;
        }
        term.out = o;
        term.out_cap = need + 1;
        od_text_wrap(s, n, term.width, term.out, term.out_cap);
    }
    fwrite(term.out, 1, need, term.real);
    if (newline)
        fputc('\n', term.real);
}

static ssize_t wrap_write(void *c, const char *buf, size_t n)
{
    (void)c;
    for (size_t i = 0; i < n;) {
        const char *nl = memchr(buf + i, '\n', n - i);
        size_t k = nl ? (size_t)(nl - (buf + i)) : n - i;
        if (term.len + k + 1 > term.cap) {
            size_t cap = (term.len + k + 1) * 2;
            char *l = realloc(term.line, cap);
            if (!l) { /* no room to hold the line: pass it through */
                fwrite(term.line, 1, term.len, term.real);
                fwrite(buf + i, 1, k + (nl != NULL), term.real);
                term.len = 0;
                i += k + (nl != NULL);
                continue;
            }
            term.line = l;
            term.cap = cap;
        }
        memcpy(term.line + term.len, buf + i, k);
        term.len += k;
        i += k;
        if (nl) {
            emit_line(term.line, term.len, 1);
            term.len = 0;
            i++;
        }
    }
    fflush(term.real);
    return (ssize_t)n;
}

static int wrap_close(void *c)
{
    (void)c;
    if (term.len)
        emit_line(term.line, term.len, 0);
    term.len = 0;
    return fflush(term.real);
}

void od_cli_stdout_finish(void)
{
    if (!term.wrapper)
        return;
    FILE *w = term.wrapper;
    if (stdout == w)
        stdout = term.real;
    term.wrapper = NULL;
    fclose(w);
    fflush(term.real);
    free(term.line);
    free(term.out);
    term.line = term.out = NULL;
    term.cap = term.out_cap = term.len = 0;
}

void od_cli_stdout_init(void)
{
    if (term.wrapper || !isatty(STDOUT_FILENO) || fileno(stdout) != STDOUT_FILENO)
        return;
    cookie_io_functions_t io = {NULL, wrap_write, NULL, wrap_close};
    FILE *w = fopencookie(NULL, "w", io);
    if (!w)
        return;
    setvbuf(w, NULL, _IOLBF, 0);
    term.real = stdout;
    term.width = terminal_columns(STDOUT_FILENO);
    term.wrapper = w;
    stdout = w;
    atexit(od_cli_stdout_finish);
}

/* Rotating buffers for od_cli_esc and friends, grown as needed. */
static char *ring_buffer(size_t need)
{
    static _Thread_local char *bufs[8];
    static _Thread_local size_t caps[8];
    static _Thread_local unsigned next;
    unsigned i = next++ % 8;
    if (caps[i] < need) {
        char *b = realloc(bufs[i], need);
        if (!b)
            return NULL;
        bufs[i] = b;
        caps[i] = need;
    }
    return bufs[i];
}

const char *od_cli_esc(const char *s)
{
    if (!s)
        return "(null)";
    size_t n = strlen(s);
    if (od_text_is_safe(s, n, 0))
        return s;
    size_t need = od_text_escape(s, n, 0, NULL, 0) + 1;
    char *b = ring_buffer(need);
    if (!b)
        return "(out of memory)";
    od_text_escape(s, n, 0, b, need);
    return b;
}

const char *od_cli_site(const char *s)
{
    if (!s)
        return "(null)";
    return od_cli_esc(od_path_short(s, od_cli_cwd()));
}

const char *od_cli_esc_paths(const char *s)
{
    if (!s)
        return "(null)";
    size_t n = strlen(s);
    size_t need = od_text_shorten_paths(s, n, od_cli_cwd(), NULL, 0) + 1;
    char *b = ring_buffer(need);
    if (!b)
        return od_cli_esc(s);
    od_text_shorten_paths(s, n, od_cli_cwd(), b, need);
    return od_cli_esc(b);
}

const char *od_cli_cwd(void)
{
    static char cwd[PATH_MAX];
    static int done;
    if (!done) {
        done = 1;
        const char *pwd = getenv("PWD");
        struct stat a, b;
        if (pwd && pwd[0] == '/' && strlen(pwd) < sizeof cwd && stat(pwd, &a) == 0 && stat(".", &b) == 0 &&
            a.st_dev == b.st_dev && a.st_ino == b.st_ino)
            memcpy(cwd, pwd, strlen(pwd) + 1);
        else if (!getcwd(cwd, sizeof cwd))
            cwd[0] = 0;
    }
    return cwd;
}

json_t *od_cli_json_str(const char *s)
{
    return od_json_string(s);
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
