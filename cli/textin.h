/* textin.h - helpers shared by triage, trend, doctor and report: reading a (possibly
 * gzipped) text input incrementally, and the sentences that explain an OOM report. */
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

/* What the first bytes (up to OD_FILE_HEAD_BYTES) tell, by od_file_kind_detect: a
 * snapshot (plain or gzipped), a profiler record, or OD_FILE_UNDECIDED (text: the readers
 * decide). The one place doctor, report and trend ask it. */
od_file_kind od_cli_text_kind(const od_cli_text *t);

/* Whether the input can be opened again by name (a regular file), so that a profiler
 * record found in the head is better read from the path than slurped here. */
int od_cli_text_reopenable(const od_cli_text *t);

/* Hand the whole input, head first, to fn(ctx, data, n) chunk by chunk, until the end or
 * until fn returns nonzero. Returns 0, or an exit code after printing the read error. */
typedef int (*od_cli_chunk_fn)(void *ctx, const void *data, size_t n);
int od_cli_text_each(od_cli_text *t, od_cli_chunk_fn fn, void *ctx);

/* Read the whole input into a malloc'd, NUL-terminated buffer the caller frees (*len
 * excludes the NUL): for profiler records given on stdin (a snapshot is streamed:
 * od_cli_text_load_snapshot). NULL with the error printed and *exit_code set. */
char *od_cli_text_slurp(od_cli_text *t, size_t *len, int *exit_code);
/* Load the snapshot t holds (its head told a snapshot), streamed on from where the head
 * was taken (a file or a pipe alike, with t's progress), in bounded memory. NULL with the
 * error printed and *exit_code set. */
od_snapshot *od_cli_text_load_snapshot(od_cli_text *t, int *exit_code);
void od_cli_text_close(od_cli_text *t);

/* Triage the log in path ("-" = stdin) as it is read: *out receives the result (free with
 * od_triage_free). Returns 0, or an exit code after printing the error (a read error, a
 * run without a line break). */
int od_cli_triage_text(const char *path, od_triage **out);

/* What reading a text input whole told (od_cli_text_read). */
typedef struct {
    od_file_kind kind;   /* OD_FILE_CONFIG, _SERIES, _LOG, _BFC_LOG or _NOTHING */
    od_series *series;   /* OD_FILE_SERIES */
    od_triage *triage;   /* OD_FILE_LOG, OD_FILE_BFC_LOG */
    char *text;          /* NUL-terminated, len bytes: the whole text when it opens with '{'
                            and is at most OD_CLI_KEEP_TEXT bytes (a config); else NULL */
    size_t len;
} od_cli_textin;

/* Read t, whose head decided head_kind (OD_FILE_UNDECIDED, or OD_FILE_BFC_LOG), in one
 * pass that feeds the series parser and the triage stream together, and decide its kind
 * as lib/inputkind orders kinds. Fills *r (free with od_cli_textin_free); returns 0 or an
 * exit code after printing the error. */
int od_cli_text_read(od_cli_text *t, od_file_kind head_kind, od_cli_textin *r);
void od_cli_textin_free(od_cli_textin *r);

/* Read all of path ("-" = stdin) whole, as od_cli_text_slurp: for a model's config.json.
 * A run of OD_LINE_MAX_BYTES without a line break is refused as for every text input. */
char *od_cli_read_all(const char *path, size_t *len, int *exit_code);

/* A text that opens with '{' is kept whole while it is at most this size: a model's
 * config.json is told by its whole text (and they are a few KiB). */
#define OD_CLI_KEEP_TEXT (16u << 20)

/* One sentence giving the verdict's reason with its numbers (IEC units). */
void od_cli_oom_reason(const od_oom_report *r, char *buf, size_t size);

/* A note on how the request figure relates to the tensor, or NULL. */
const char *od_cli_request_note(const od_oom_report *r);

/* A report as the JSON object `triage --json` prints (new reference). */
json_t *od_cli_oom_json(const od_oom_report *r);

#endif
