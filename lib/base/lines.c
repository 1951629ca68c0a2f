/* lines.c - lines from a chunked stream, and the line-break rule (see lines.h). */
#include "base/lines.h"

#include <stdlib.h>
#include <string.h>

#include "base/mem.h"

void od_lines_init(od_lines *l)
{
    memset(l, 0, sizeof *l);
}

void od_lines_free(od_lines *l)
{
    free(l->buf);
    l->buf = NULL;
    l->len = l->cap = 0;
}

/* Check the run rule over bytes [p, e) of the chunk, whose first byte is at stream offset
 * off. Moves run_start past each '\r'; fails when a run passes OD_LINE_MAX_BYTES. */
static od_status check_runs(od_lines *l, const char *p, const char *e, uint64_t off, od_error *err)
{
    if (off + (uint64_t)(e - p) - l->run_start <= OD_LINE_MAX_BYTES)
        return OD_OK;
    for (const char *r; (r = memchr(p, '\r', (size_t)(e - p))) != NULL; p = r + 1) {
        uint64_t at = off + (uint64_t)(r - p);
        if (at - l->run_start > OD_LINE_MAX_BYTES)
            break;
        off = at + 1;
        l->run_start = off;
    }
    if (off + (uint64_t)(e - p) - l->run_start > OD_LINE_MAX_BYTES)
        return od_fail_at(err, OD_ERR_LIMIT, l->run_start,
                          "no line break in %u MiB: not text (a log, step log or series)", OD_LINE_MAX_BYTES >> 20);
    return OD_OK;
}

static int append(od_lines *l, const char *p, size_t n)
{
    if (!od_grow((void **)&l->buf, &l->cap, l->len + n + 1, 1))
        return 0;
    memcpy(l->buf + l->len, p, n);
    l->len += n;
    return 1;
}

/* A line that '\r's keep going (a progress bar redrawn for hours) is not held whole: past
 * twice OD_LINE_MAX_BYTES, what comes before its last '\r' is dropped, as a terminal
 * overwrites it. The run after that '\r' is shorter than OD_LINE_MAX_BYTES (the rule), so
 * the line held stays under three times that, and each byte is dropped once. */
static void forget_redrawn(od_lines *l)
{
    if (l->len <= 2 * (size_t)OD_LINE_MAX_BYTES)
        return;
    size_t k = l->len;
    while (k > 0 && l->buf[k - 1] != '\r')
        k--;
    if (k == 0)
        return;
    memmove(l->buf, l->buf + k, l->len - k);
    l->len -= k;
}

od_status od_lines_feed(od_lines *l, const void *data, size_t n, od_line_fn fn, void *ctx, od_error *err)
{
    if (n == 0) /* data may be NULL then: no arithmetic on it */
        return OD_OK;
    const char *p = data, *end = p + n;
    while (p < end && !l->stopped) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *e = nl ? nl : end;
        od_status st = check_runs(l, p, e, l->offset, err);
        if (st != OD_OK)
            return st;
        if (!nl) {
            if (!append(l, p, (size_t)(e - p)))
                return od_fail(err, OD_ERR_NOMEM, "out of memory");
            l->offset += (uint64_t)(e - p);
            forget_redrawn(l);
            break;
        }
        uint64_t start = l->offset - l->len;
        if (l->len) {
            if (!append(l, p, (size_t)(e - p)))
                return od_fail(err, OD_ERR_NOMEM, "out of memory");
            l->stopped = fn(ctx, l->buf, l->len, start) != 0;
            l->len = 0;
        } else {
            l->stopped = fn(ctx, p, (size_t)(e - p), start) != 0;
        }
        l->offset += (uint64_t)(e - p) + 1;
        l->run_start = l->offset;
        p = e + 1;
    }
    return OD_OK;
}

void od_lines_end(od_lines *l, od_line_fn fn, void *ctx)
{
    if (l->len && !l->stopped)
        l->stopped = fn(ctx, l->buf, l->len, l->offset - l->len) != 0;
    l->len = 0;
}
