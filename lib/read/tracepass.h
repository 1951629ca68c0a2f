/* tracepass.h - a snapshot's device trace read in order, in batches, and snapshots whose
 * traces are not held in memory.
 *
 * od_snapshot_load holds every trace entry (8 bytes each) so that any entry can be read
 * at any time (od_trace_at). A replay only walks the trace in order, a few times; for it
 * od_snapshot_load_streamed keeps memory to what is live:
 *   - a regular uncompressed file is read again by each pass, from the offset where the
 *     device's trace begins (nothing is kept per entry; each pass checks that it reads
 *     what the load read, and fails with OD_ERR_IO when the file changed in between);
 *   - any other input (stdin, gzip) cannot be read again: its entries are kept in a
 *     compact stream (key numbers guessed from the loop the trace repeats, time deltas:
 *     about 1.5 bytes an entry on a training trace, at most 11);
 *   - the pickle's memo lets go of what only trace entries refer to
 *     (od_pickle_options.forget_absorbed).
 * A streamed snapshot's trace entries carry no stack (stack 0): a replay needs none. Its
 * od_device_trace views give n_entries and device only: od_trace_at must not be used on
 * them, only passes. Everything else (segments, blocks, settings, annotations) is as
 * od_snapshot_load gives it.
 *
 * od_snapshot_load_streamed's input must stay open (not read further by the caller)
 * until the snapshot is freed; the snapshot is freed with od_snapshot_free. Passes over
 * a held snapshot may run in several threads at once; over a streamed one, one at a time.
 * od_trace_pass_open returns a pass the caller frees with od_trace_pass_close (NULL is
 * fine). */
#ifndef OD_TRACEPASS_H
#define OD_TRACEPASS_H

#include "oomdoc/snapshot.h"

/* Like od_snapshot_load, keeping the traces as above. Also fails with OD_ERR_LIMIT when
 * the pickle refers back to a trace entry's values from outside the traces, or lays its
 * traces out in an order pickle.dump never writes (then load it whole). */
od_status od_snapshot_load_streamed(od_input *in, od_snapshot **out, od_error *err);

/* 1 for a snapshot from od_snapshot_load_streamed. */
int od_snapshot_is_streamed(const od_snapshot *snap);

typedef struct od_trace_pass od_trace_pass;

/* A pass over device's trace from its first entry (an empty pass for a device without
 * one). Fails with OD_ERR_IO (the file cannot be read again) or OD_ERR_NOMEM. */
od_status od_trace_pass_open(const od_snapshot *snap, int64_t device, od_trace_pass **out, od_error *err);
/* The next entries, up to max of them, into buf: their number; 0 at the end of the trace
 * or on an error (od_trace_pass_status tells which). */
size_t od_trace_pass_read(od_trace_pass *p, od_trace_entry *buf, size_t max);
/* OD_OK, or what stopped the pass (err filled, with the byte offset for a file). */
od_status od_trace_pass_status(const od_trace_pass *p, od_error *err);
void od_trace_pass_close(od_trace_pass *p);

/* The compact stream (tracestore.c): a store that keeps entries only for reading in
 * order. od_trace_store_add appends to it; od_trace_store_view is not for it. */
od_trace_store *od_trace_store_new_stream(void);

/* A reader of a compact stream from its first entry; NULL when out of memory. Freed with
 * od_trace_stream_close (NULL is fine). */
typedef struct od_trace_stream od_trace_stream;
od_trace_stream *od_trace_stream_open(const od_trace_store *s);
/* The next entry into *e: 1, or 0 at the end. */
int od_trace_stream_next(od_trace_stream *r, od_trace_entry *e);
void od_trace_stream_close(od_trace_stream *r);

#endif
