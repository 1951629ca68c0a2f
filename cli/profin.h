/* profin.h - reading profiler records for doctor and report: streamed from the file
 * (traces can be hundreds of MB), or from text already in memory (stdin). What kind of
 * input a file is, textin's od_cli_text_kind tells. */
#ifndef OD_CLI_PROFIN_H
#define OD_CLI_PROFIN_H

#include <stddef.h>

#include "read/inputkind.h"
#include "read/profile.h"

/* Load a profiler record: from text[0..len) when text is not NULL, else streamed from
 * path. Returns the profile (free with od_profile_free), or NULL with *exit_code set and
 * the error printed. */
od_profile *od_cli_load_profile(const char *path, const char *text, size_t len, int *exit_code);

#endif
