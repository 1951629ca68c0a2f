/* reread.h - reading a regular file's input again from an offset (for passes over a
 * snapshot that is not held in memory: tracepass.h).
 *
 * od_input_open_at returns an input the caller frees with od_input_close (NULL is fine);
 * it reads with pread on the descriptor of the FILE the first input reads, so the FILE
 * (still the caller's) must stay open while it is used, and its position is untouched. */
#ifndef OD_REREAD_H
#define OD_REREAD_H

#include "oomdoc/input.h"

/* 1 when in reads an uncompressed regular file from a FILE* (od_input_open_file), which
 * od_input_open_at can read again; 0 for gzip, pipes, terminals, memory and resumed
 * inputs. */
int od_input_can_reread(const od_input *in);

/* A new input giving in's stream from byte offset on (offsets as in's, from where in began
 * reading). OD_ERR_ARG when od_input_can_reread(in) is 0; OD_ERR_NOMEM. Read errors show
 * through od_input_error with the file offset. */
od_status od_input_open_at(const od_input *in, uint64_t offset, od_input **out, od_error *err);

#endif
