/* profin.h - reading profiler records for doctor and report: look at a file's first bytes
 * to tell a profiler record, then stream it (traces can be hundreds of MB), or read one
 * from text already in memory (stdin). */
#ifndef OD_CLI_PROFIN_H
#define OD_CLI_PROFIN_H

#include <stddef.h>

#include "../lib/profile.h"

/* The od_profile_kind of path from its first 4 KiB (gunzipped), or -1 (also for "-" and
 * unreadable files, which the caller's ordinary reading reports). */
int od_cli_profile_kind(const char *path);

/* Load a profiler record: from text[0..len) when text is not NULL, else streamed from
 * path. Returns the profile (free with od_profile_free), or NULL with *exit_code set and
 * the error printed. */
od_profile *od_cli_load_profile(const char *path, const char *text, size_t len, int *exit_code);

#endif
