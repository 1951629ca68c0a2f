/* output.h - what every subcommand shares: exit codes, error lines, colour, JSON,
 * progress, opening input files. This is the only place that maps library statuses to
 * exit codes. */
#ifndef OD_CLI_OUTPUT_H
#define OD_CLI_OUTPUT_H

#include <stdio.h>
#include <jansson.h>

#include "oomdoc/od.h"

/* Documented exit codes (oomdoc --help, man/oomdoc.1). */
enum {
    OD_EXIT_OK = 0,        /* done, whatever the diagnosis says */
    OD_EXIT_NOTHING = 1,   /* nothing to report, or a --fail-on condition met */
    OD_EXIT_USAGE = 2,     /* usage error / bad option value */
    OD_EXIT_INPUT = 3,     /* unreadable or invalid input */
    OD_EXIT_NODEV = 4,     /* GPU / NVML unavailable */
    OD_EXIT_INTERNAL = 70  /* internal error */
};

#define OD_EXIT_CODES_HELP \
    "Exit codes: 0 done (whatever the diagnosis says); 1 nothing to report or a --fail-on\n" \
    "condition met; 2 usage error; 3 unreadable or invalid input; 4 GPU/NVML unavailable;\n" \
    "70 internal error.\n"

/* The exit code for a library status. */
int od_cli_exit_code(od_status status);

/* Print "oomdoc: FILE: byte N: message" (FILE and offset when known) to stderr and
 * return the exit code for err->status. file may be NULL. */
int od_cli_report_error(const char *file, const od_error *err);

/* Print "oomdoc: CMD: message" plus a hint to run --help; returns OD_EXIT_USAGE. The
 * message is escaped (od_text_escape): an argument it quotes cannot drive the terminal. */
int od_cli_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The usage error for the option getopt_long (with shortopts and longopts) just refused,
 * named as typed: a known option missing its value ("--capacity needs a value") or given
 * one it does not take ("--json takes no value"), an unknown short option by its letter,
 * even inside a cluster ("-snap" refuses -s), or an unknown long one by its name
 * ("--bogus", without any "=value"). */
struct option;
int od_cli_unknown_option(const char *cmd, const char *shortopts, const struct option *longopts, char *const argv[]);

/* True when colour may be written to f: a terminal, NO_COLOR unset, TERM not "dumb". */
int od_cli_color(FILE *f);

/* ANSI sequences, or "" when colour is off for stdout. Call od_cli_color_init first. */
void od_cli_color_init(void);
extern const char *od_c_bold, *od_c_red, *od_c_yellow, *od_c_green, *od_c_dim, *od_c_reset;

/* Write a JSON document to stdout (2-space indent, keys in insertion order, newline).
 * Steals the reference. Returns 0, or OD_EXIT_INTERNAL if writing failed. */
int od_cli_print_json(json_t *doc);

/* Progress on long work: a line on stderr, rewritten in place, only on a terminal and
 * not with od_cli_quiet set. */
void od_cli_progress(const char *what, double fraction);
void od_cli_progress_done(void);
extern int od_cli_quiet;

/* Show the progress of reading in (named path; what: the phase, "reading" or "parsing";
 * total_bytes: the source's size, 0 when unknown) once the read has lasted about a
 * second: bytes read of the total, the share and the time left, one line rewritten in
 * place and cleared when the read ends. Silent unless stderr is a terminal; nothing
 * with od_cli_quiet. */
struct od_input;
void od_cli_progress_input(struct od_input *in, const char *path, const char *what, uint64_t total_bytes);
/* The size of the regular file f is open on; 0 for a pipe, a terminal or an error. */
uint64_t od_cli_file_size(FILE *f);

/* Open FILE for reading ("-" is stdin). On failure prints the error line and returns
 * NULL with *exit_code set. Close with od_cli_close. */
FILE *od_cli_open(const char *path, int *exit_code);
void od_cli_close(FILE *f);
/* NULL when path names a regular file (links followed) that can be opened for reading,
 * else why not ("is a FIFO, expected a file", ...), without ever waiting on a FIFO: the
 * check before a path is handed to something that would block on it (dlopen). */
const char *od_cli_regular_file_problem(const char *path);

/* A file written whole or not at all (report -o, profile --svg, watch --out): the bytes
 * go to a temporary file created beside the target (O_CREAT | O_EXCL: a name or link
 * planted there is never followed), which od_cli_safe_commit flushes, fsyncs and renames
 * over the target, wherever it is (/dev/shm and /tmp included). Until then - an error, a
 * kill, a full disk - the old file is intact; a symbolic link at the target is replaced,
 * never written through; SIGINT, SIGTERM or SIGHUP during the write remove the temporary.
 * Two targets are written in place: stdout (a path that is the file descriptor 1 is
 * open on: /dev/stdout, /proc/self/fd/1) and /dev/null; any other device, a FIFO, a
 * socket or a directory is refused. */
typedef struct od_safe_sink od_safe_sink;
typedef struct {
    FILE *f;      /* write here */
    char *path;   /* the target */
    char *tmp;    /* the temporary beside it (NULL: written in place) */
    od_safe_sink *sink; /* what f's writes met: bytes written, the first error */
    int slot;     /* its place among the temporaries a signal removes; -1: none */
} od_safe_file;

/* Create the temporary for path ("-" is refused by the caller). 0 on success; otherwise
 * prints "oomdoc: PATH: cannot write: why" and returns OD_EXIT_INPUT (*sf left empty). */
int od_cli_safe_open(od_safe_file *sf, const char *path);
/* Flush, fsync, close and rename the temporary over the target (then fsync the
 * directory). 0 on success; otherwise prints the error - its errno by name, ENOSPC for a
 * full disk - removes the temporary (the old file stays as it was) and returns
 * OD_EXIT_INPUT. Frees sf's strings either way. */
int od_cli_safe_commit(od_safe_file *sf);
/* od_cli_safe_commit, then "wrote FILE (SIZE)" on stderr (not with --quiet, not for
 * stdout). */
int od_cli_safe_commit_report(od_safe_file *sf);
/* A writer (od_report_write, od_profile_svg_write) failed with err on sf: say why - the
 * write's own errno when it had one (a full disk: ENOSPC), else err - drop the temporary
 * and return the exit code. */
int od_cli_safe_fail(od_safe_file *sf, const od_error *err);
/* Rename the temporary over the target now and go on writing the FILE sf->f was, for a
 * file read while it grows (watch --out: the old file is replaced only once the new one
 * exists). 0 on success: that FILE is the caller's to fclose and sf is emptied.
 * Otherwise like od_cli_safe_commit's failure. */
int od_cli_safe_publish(od_safe_file *sf);
/* Drop the temporary: the target is left untouched. An empty sf is fine. */
void od_cli_safe_abort(od_safe_file *sf);
/* Refuse an output that is one of the inputs (the same file, by device and inode):
 * prints "oomdoc: CMD: OPT FILE is one of the inputs ..." and returns OD_EXIT_USAGE, else
 * 0. A target that does not exist yet is fine. */
int od_cli_refuse_output_onto_input(const char *cmd, const char *opt, const char *out,
                                    char *const *inputs, size_t n_inputs);
/* "No space left on device (ENOSPC)": strerror with the errno's name, for messages. */
const char *od_cli_errno_text(int e);

/* ---- text on stdout ------------------------------------------------------------------
 * When stdout is a terminal, od_cli_stdout_init puts a writer in front of it that wraps
 * every line at word boundaries to the terminal's width (COLUMNS, else TIOCGWINSZ, else
 * 80) with a hanging indent (od_text_wrap); colour takes no columns, and a line drawn in
 * place (cursor movement) passes as it is. Not a terminal (a pipe, a file, a capture):
 * nothing changes, so output stays byte-identical. */
void od_cli_stdout_init(void);
/* Flush what the writer holds and put the real stdout back (also run at exit). */
void od_cli_stdout_finish(void);
/* stdout without the wrapping writer (what was written through it flushed first): for
 * bytes that must reach stdout as they are (a JSON document, CSV, a table drawn in
 * place). */
FILE *od_cli_raw_stdout(void);
/* 1 when stdout is a terminal (also behind the wrapping writer). */
int od_cli_stdout_tty(void);
/* The terminal's columns for stdout (COLUMNS, else TIOCGWINSZ, else 80); 0 when stdout is
 * not a terminal. */
size_t od_cli_term_width(void);

/* An untrusted string (a frame, a name from a snapshot, a config, NVML) as text output
 * shows it: od_text_escape'd (controls, ESC, invalid UTF-8 as escapes). A buffer of the
 * thread's own, valid until the 8th next call of od_cli_esc, od_cli_site or
 * od_cli_esc_paths; NULL gives "(null)". */
const char *od_cli_esc(const char *s);
/* A site ("file:line:function") or a path for text output: shortened as od_path_short
 * does (the package's own path under site-packages, relative under the working
 * directory), then escaped. JSON keeps the full one. */
const char *od_cli_site(const char *s);
/* Free text with paths in it: every path shortened (od_text_shorten_paths), then
 * escaped. */
const char *od_cli_esc_paths(const char *s);
/* The working directory that paths are shown relative to ($PWD when it is that
 * directory, else getcwd), or "" when unknown. */
const char *od_cli_cwd(void);

/* A JSON string of s that is always valid UTF-8 (a byte that is not becomes U+FFFD):
 * json_string refuses such a string, and a document would lose the value with it. */
json_t *od_cli_json_str(const char *s);

/* An input as messages and --json name it: "<stdin>" for "-", else the path as given. */
const char *od_cli_input_name(const char *path);
/* name as it may be printed inside a one-line message: od_text_escape with backslashes
 * escaped too (\n, \t, \r, \e, \\, \xHH, \u{HHHH}), valid UTF-8 kept. Returns a buffer
 * of the thread's own, valid until the 4th next call (so one message may show up to four
 * names); a name too long for it ends in "...". NULL gives "(null)". */
const char *od_cli_name(const char *name);
/* An input path (or "-") as an error line names it: od_cli_name(od_cli_input_name(path)). */
const char *od_cli_input_shown(const char *path);

/* Parse a size option (plain bytes, KiB/MiB/GiB, KB/MB/GB); prints a usage error and
 * returns OD_EXIT_USAGE on a bad value, 0 on success. */
int od_cli_parse_size_opt(const char *cmd, const char *opt, const char *text, uint64_t *out);

/* Parse a non-negative integer option in [min, max]; like od_cli_parse_size_opt. */
int od_cli_parse_int_opt(const char *cmd, const char *opt, const char *text,
                         long min, long max, long *out);

#endif
