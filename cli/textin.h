/* textin.h - helpers shared by triage, trend and doctor: reading a whole (possibly
 * gzipped) input into memory, and the sentences that explain an OOM report. */
#ifndef OD_CLI_TEXTIN_H
#define OD_CLI_TEXTIN_H

#include <stddef.h>
#include <jansson.h>

#include "../lib/triage.h"

/* Largest input read whole (logs and series; snapshots stream elsewhere). */
#define OD_CLI_MAX_TEXT (1ULL << 30)

/* Read all of path ("-" = stdin), gunzipping transparently, into a malloc'd buffer the
 * caller frees (NUL-terminated; *len excludes the NUL). On failure prints the error line
 * and returns NULL with *exit_code set. */
char *od_cli_read_all(const char *path, size_t *len, int *exit_code);

/* One sentence giving the verdict's reason with its numbers (IEC units). */
void od_cli_oom_reason(const od_oom_report *r, char *buf, size_t size);

/* A note on how the request figure relates to the tensor, or NULL. */
const char *od_cli_request_note(const od_oom_report *r);

/* A report as the JSON object `triage --json` prints (new reference). */
json_t *od_cli_oom_json(const od_oom_report *r);

#endif
