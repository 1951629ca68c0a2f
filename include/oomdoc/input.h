/* input.h - a byte stream from a FILE* or memory, gunzipped on the fly when it starts
 * with the gzip magic. Parsers stream from it, so no input is ever mapped or read whole.
 *
 * od_input_open_* return an input the caller frees with od_input_close (NULL is fine);
 * the FILE* stays the caller's. */
#ifndef OD_INPUT_H
#define OD_INPUT_H

#include <stdint.h>
#include <stdio.h>

#include "od.h"

typedef struct od_input od_input;

/* Read from f (a file or stdin); gzip is detected from the first two bytes. */
OD_API od_status od_input_open_file(FILE *f, od_input **out, od_error *err);
/* Read from a memory buffer that outlives the input (fuzzers, tests). */
OD_API od_status od_input_open_memory(const void *data, size_t size, od_input **out, od_error *err);
/* A stream whose first bytes a caller already took (to tell its kind): yields a[0..na),
 * then b[0..nb), then the rest of `rest`. a and b may be bytes rest lent by
 * od_input_borrow (valid until rest's next borrow, which comes only after them); rest
 * stays the caller's, closed after this input. Errors and gzip are rest's; so is progress:
 * set it on rest (this input reports none of its own). */
OD_API od_status od_input_open_resumed(const void *a, size_t na, const void *b, size_t nb, od_input *rest,
                                       od_input **out, od_error *err);
OD_API void od_input_close(od_input *in);

/* Read up to n bytes into buf; returns the count, 0 at end of input. On a read or
 * decompression error returns 0 and od_input_error() reports it. */
OD_API size_t od_input_read(od_input *in, void *buf, size_t n);
/* Read without copying: *data receives the next bytes of the stream, read-only and valid
 * until the next od_input_borrow, od_input_read or od_input_close; returns their count,
 * 0 at end of input or on an error (od_input_error tells). Memory input is handed over
 * whole, a regular file in 256 KiB pieces, gzip and pipes in the background reader's
 * chunks. */
OD_API size_t od_input_borrow(od_input *in, const unsigned char **data);
/* For tests: od_input_borrow hands out at most max bytes at a time (0: no limit), so a
 * reader meets chunk boundaries everywhere. */
OD_API void od_input_limit_chunks(od_input *in, size_t max);
/* OD_OK, or the error that stopped reading (err filled). */
OD_API od_status od_input_error(const od_input *in, od_error *err);
/* Progress of a long read: fn(ctx, consumed_bytes, done) is called on the caller's thread,
 * from od_input_read and od_input_borrow, each time about another MiB of the source has
 * been consumed (compressed bytes for gzip, so that they count against the file's size),
 * and once with done = 1 when the stream ends or fails. fn NULL: no calls. */
typedef void (*od_input_progress_fn)(void *ctx, uint64_t consumed_bytes, int done);
OD_API void od_input_set_progress(od_input *in, od_input_progress_fn fn, void *ctx);

/* The reader is done with in: for a gzip stream, read (and drop) what is left of it up to
 * its end, so that inflate reaches the trailer and checks its CRC-32 and ISIZE; a reader
 * that stops at its format's own end (a pickle's STOP) would otherwise accept a file whose
 * bytes changed. OD_OK, or the stream's error: OD_ERR_FORMAT with the compressed byte
 * offset for a bad trailer or corrupt data, or for more than 64 MiB of data left after
 * the reader's end. Nothing is read from a plain stream (its tail is the reader's
 * business, and a pipe's end may never come). */
OD_API od_status od_input_finish(od_input *in, od_error *err);

/* 1 when the stream is gzip-compressed. */
OD_API int od_input_is_gzip(const od_input *in);

#endif
