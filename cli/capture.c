/* capture.c - run a subcommand in this process with its output captured in memory: the
 * entry point liboomdoc.so exports for the Python package (python/oomdoc/_binding.py), so
 * `oomdoc.doctor(...)` returns the very document `oomdoc doctor --json` prints, computed
 * by the same code, without starting a process or writing a file.
 *
 * How: the subcommands print to stdout and stderr. For the duration of one call both
 * stream variables point at open_memstream buffers (glibc documents stdin, stdout and
 * stderr as ordinary assignable variables), and are restored after. No file descriptor
 * is touched, so a notebook's or a server's fd 1 and 2 stay as they are. Calls are
 * serialized by a mutex; another thread's C-level printf during a call lands in the
 * capture (Python's own print does not: it writes through its own file objects). */
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "oomdoc/oomdoc.h"
#include "output.h"

typedef int (*command_fn)(int argc, char **argv);

/* The subcommands that run to completion on their inputs. watch and gpus are left out:
 * watch installs signal handlers and runs a child process, gpus reads live NVML state;
 * both belong in a process of their own. */
static command_fn find_command(const char *name)
{
    const struct {
        const char *name;
        command_fn fn;
    } table[] = {
        {"doctor", od_cmd_doctor}, {"triage", od_cmd_triage}, {"snapshot", od_cmd_snapshot},
        {"replay", od_cmd_replay}, {"plan", od_cmd_plan},     {"trend", od_cmd_trend},
        {"diff", od_cmd_diff},     {"report", od_cmd_report}, {"profile", od_cmd_profile},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(table[i].name, name) == 0)
            return table[i].fn; /* NULL when that command is not linked in (weak) */
    return NULL;
}

static pthread_mutex_t capture_lock = PTHREAD_MUTEX_INITIALIZER;

/* The subcommands set optind = 1, which glibc takes as "go on": a previous call that
 * stopped inside "-hx", or after its last option, leaves getopt pointing into that
 * call's argv, which the caller has freed since. optind = 0 and one empty scan make
 * glibc start over with nothing left of it. */
static void reset_getopt(void)
{
    static char prog[] = "oomdoc";
    char *none[] = {prog, NULL};
    optind = 0;
    (void)getopt(1, none, "");
    optind = 1;
}

/* Hand a memstream's buffer to the caller, or free it when the caller does not want it. */
static void hand_over(char *buf, size_t len, char **out, size_t *out_len)
{
    if (out) {
        *out = buf;
        if (out_len)
            *out_len = len;
    } else {
        free(buf);
    }
}

OD_API int od_cli_run_capture(int argc, char **argv, char **out, size_t *out_len, char **err,
                       size_t *err_len)
{
    if (out)
        *out = NULL;
    if (err)
        *err = NULL;
    if (out_len)
        *out_len = 0;
    if (err_len)
        *err_len = 0;
    if (argc < 1 || !argv || !argv[0])
        return OD_EXIT_USAGE;
    command_fn run = find_command(argv[0]);

    pthread_mutex_lock(&capture_lock);
    char *obuf = NULL, *ebuf = NULL;
    size_t olen = 0, elen = 0;
    FILE *o = open_memstream(&obuf, &olen);
    FILE *e = open_memstream(&ebuf, &elen);
    int rc;
    if (!o || !e) {
        rc = OD_EXIT_INTERNAL;
    } else if (!run) {
        fprintf(e, "oomdoc: '%s' cannot run in-process (run the oomdoc binary)\n", argv[0]);
        rc = OD_EXIT_USAGE;
    } else {
#ifdef __GLIBC__
        fflush(stdout);
        fflush(stderr);
        FILE *saved_out = stdout, *saved_err = stderr;
        stdout = o;
        stderr = e;
        reset_getopt();
        rc = run(argc, argv);
        fflush(o);
        fflush(e);
        stdout = saved_out;
        stderr = saved_err;
#else
        fprintf(e, "oomdoc: in-process capture needs glibc (run the oomdoc binary)\n");
        rc = OD_EXIT_INTERNAL;
#endif
    }
    if (o)
        fclose(o);
    if (e)
        fclose(e);
    pthread_mutex_unlock(&capture_lock);
    hand_over(obuf, olen, out, out_len);
    hand_over(ebuf, elen, err, err_len);
    return rc;
}

OD_API void od_cli_free(void *buf)
{
    free(buf);
}
