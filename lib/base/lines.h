/* lines.h - split a text stream fed in chunks of any size into lines, and the one rule that
 * stops a text input that is not text: logs, step logs and series are read a line at a time,
 * so memory is a line plus what the parser keeps, never the input.
 *
 * The rule (OD_LINE_MAX_BYTES): a text input holds a line break ('\n' or '\r') at least every
 * 16 MiB. A run of more bytes without one (/dev/zero, a gzip bomb of zeros, a binary file)
 * fails with OD_ERR_LIMIT at the offset where the run started, after reading no more than
 * 16 MiB of it. A '\r' ends a run but not a line (progress bars redraw with it); a line fed in
 * pieces that '\r's keep longer than 32 MiB loses what comes before its last '\r' (what a
 * terminal would have overwritten), so a line held costs at most 48 MiB.
 *
 * od_lines is caller-owned (zero it, or od_lines_init); od_lines_free frees its buffer. */
#ifndef OD_LINES_H
#define OD_LINES_H

#include <stddef.h>
#include <stdint.h>

#include "oomdoc/od.h"

#define OD_LINE_MAX_BYTES (16u << 20)

/* Called for each line, without its '\n' (a last line without one is passed too);
 * offset is the line's first byte in the stream (its first one kept, above). Returns 0 to go on, nonzero to stop:
 * od_lines_feed then returns OD_OK at once and calls fn no more. */
typedef int (*od_line_fn)(void *ctx, const char *line, size_t len, uint64_t offset);

typedef struct {
    char *buf;          /* the unfinished line */
    size_t len, cap;
    uint64_t offset;    /* stream offset of the next byte fed */
    uint64_t run_start; /* offset where the current run without a line break started */
    int stopped;        /* fn asked to stop */
} od_lines;

void od_lines_init(od_lines *l);
/* Split data[0..n) (n may be 0), calling fn for each complete line. Fails with OD_ERR_LIMIT
 * when the rule above is broken, OD_ERR_NOMEM; the lines before the failure were passed. */
od_status od_lines_feed(od_lines *l, const void *data, size_t n, od_line_fn fn, void *ctx, od_error *err);
/* End of the stream: pass the last line when it has no '\n'. */
void od_lines_end(od_lines *l, od_line_fn fn, void *ctx);
void od_lines_free(od_lines *l);

#endif
