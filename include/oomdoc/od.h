/* od.h - shared contract of the oomdoc library: status codes, the error record,
 * version. Every public symbol of lib/ carries the od_ / OD_ prefix.
 *
 * Library code never prints, exits, reads the environment or the clock: anything it
 * needs comes in through arguments, anything it learns goes out through return values
 * and an od_error the caller owns. */
#ifndef OD_H
#define OD_H

#include <stddef.h>
#include <stdint.h>

#define OD_VERSION "0.1.0"

/* What liboomdoc.so exports. The shared library is compiled with -fvisibility=hidden, so a
 * function is callable from outside only when its declaration here (include/oomdoc/) carries
 * OD_API; every other symbol stays internal (tests/suites/exports.sh lists them). */
#if defined(__GNUC__) || defined(__clang__)
#define OD_API __attribute__((visibility("default")))
#else
#define OD_API
#endif

/* Status codes returned by every function that can fail. The CLI maps them to exit
 * codes in one place (cli/output.c: od_cli_exit_code). */
typedef enum {
    OD_OK = 0,
    OD_ERR_FORMAT,   /* input is not what was expected (bad file): exit 3 */
    OD_ERR_REFUSED,  /* input asks for something unsafe (pickle GLOBAL...): exit 3 */
    OD_ERR_IO,       /* file cannot be opened or read: exit 3 */
    OD_ERR_LIMIT,    /* input exceeds a hard limit (absurd sizes): exit 3 */
    OD_ERR_ARG,      /* a caller-supplied option value is invalid: exit 2 */
    OD_ERR_NODEV,    /* GPU / NVML unavailable: exit 4 */
    OD_ERR_NOMEM,    /* out of host memory: exit 70 */
    OD_ERR_INTERNAL  /* a bug: exit 70 */
} od_status;

/* A failure explained: a sentence, and for parsers the byte offset it refers to. */
typedef struct {
    od_status status;
    int has_offset;
    uint64_t offset;
    char msg[240];
} od_error;

/* Fill *err (may be NULL) and return status. msg is printf-style. */
OD_API od_status od_fail(od_error *err, od_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Same, recording a byte offset into the input. */
OD_API od_status od_fail_at(od_error *err, od_status status, uint64_t offset, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Reset *err to "no error". */
OD_API void od_error_clear(od_error *err);
/* A short English name for a status ("invalid input", ...). Never NULL. */
OD_API const char *od_status_name(od_status status);

#endif
