/* textin.h - triage's text input, read incrementally (possibly gzipped), and the sentences
 * that explain an OOM report. Every command that takes any input reads it through the
 * library's loader instead (inputs.h, read/load.h). */
#ifndef OD_CLI_TEXTIN_H
#define OD_CLI_TEXTIN_H

#include <stddef.h>
#include <jansson.h>

#include "oomdoc/snapshot.h"
#include "read/inputkind.h"
#include "read/trend.h"
#include "read/triage/triage.h"

/* A log, step log or series as it is read: opened (gunzipped transparently), its first
 * bytes at hand to tell a snapshot or profiler record from text, then handed to the
 * parsers chunk by chunk, so that memory is what they keep, never the input. No size
 * limit: the parsers' line-break rule (lib/base/lines.h) stops what is not text.
 * od_cli_text_open returns a reader the caller frees with od_cli_text_close (NULL is
 * fine), or NULL with the error printed and *exit_code set. */
typedef struct od_cli_text od_cli_text;
od_cli_text *od_cli_text_open(const char *path, int *exit_code);

/* Hand the whole input, head first, to fn(ctx, data, n) chunk by chunk, until the end or
 * until fn returns nonzero. Returns 0, or an exit code after printing the read error. */
int od_cli_text_each(od_cli_text *t, od_chunk_fn fn, void *ctx);

void od_cli_text_close(od_cli_text *t);

/* Triage the log in path ("-" = stdin) as it is read: *out receives the result (free with
 * od_triage_free). Returns 0, or an exit code after printing the error (a read error, a
 * run without a line break). */
int od_cli_triage_text(const char *path, od_triage **out);

/* One sentence giving the verdict's reason with its numbers (IEC units). */
void od_cli_oom_reason(const od_oom_report *r, char *buf, size_t size);

/* A note on how the request figure relates to the tensor, or NULL. */
const char *od_cli_request_note(const od_oom_report *r);

/* A report as the JSON object `triage --json` prints (new reference). */
json_t *od_cli_oom_json(const od_oom_report *r);

#endif
