/* profin.h - reading profiler records for doctor and report: look at a file's first bytes
 * to tell a profiler record (lib/inputkind), then stream it (traces can be hundreds of MB),
 * or read one from text already in memory (stdin). */
#ifndef OD_CLI_PROFIN_H
#define OD_CLI_PROFIN_H

#include <stddef.h>

#include "../lib/inputkind.h"
#include "../lib/profile.h"

/* What the first OD_FILE_HEAD_BYTES of path (gunzipped) tell: od_file_kind_detect with
 * OD_DETECT_HEAD. *flags receives the flags for deciding on the whole text later
 * (OD_DETECT_GZIP when path is gzip-compressed, else 0). OD_FILE_UNDECIDED for "-" and
 * unreadable files, which the caller's ordinary reading reports. */
od_file_kind od_cli_sniff_kind(const char *path, unsigned *flags);

/* Load a profiler record: from text[0..len) when text is not NULL, else streamed from
 * path. Returns the profile (free with od_profile_free), or NULL with *exit_code set and
 * the error printed. */
od_profile *od_cli_load_profile(const char *path, const char *text, size_t len, int *exit_code);

#endif
