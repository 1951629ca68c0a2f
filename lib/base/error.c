/* error.c - the od_error record. */
#include "oomdoc/od.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static od_status vfail(od_error *err, od_status status, int has_offset, uint64_t offset,
                       const char *fmt, va_list ap)
{
    if (err) {
        err->status = status;
        err->has_offset = has_offset;
        err->offset = offset;
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    }
    return status;
}

od_status od_fail(od_error *err, od_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(err, status, 0, 0, fmt, ap);
    va_end(ap);
    return status;
}

od_status od_fail_at(od_error *err, od_status status, uint64_t offset, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(err, status, 1, offset, fmt, ap);
    va_end(ap);
    return status;
}

void od_error_clear(od_error *err)
{
    if (err)
        memset(err, 0, sizeof *err);
}

const char *od_status_name(od_status status)
{
    switch (status) {
    case OD_OK: return "ok";
    case OD_ERR_FORMAT: return "invalid input";
    case OD_ERR_REFUSED: return "refused input";
    case OD_ERR_IO: return "I/O error";
    case OD_ERR_LIMIT: return "input exceeds a limit";
    case OD_ERR_ARG: return "invalid argument";
    case OD_ERR_NODEV: return "GPU unavailable";
    case OD_ERR_NOMEM: return "out of memory";
    case OD_ERR_INTERNAL: return "internal error";
    }
    return "unknown status";
}
