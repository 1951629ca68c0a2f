/* snapin.h - loading a snapshot named on the command line (doctor, trend, diff). */
#ifndef OD_CLI_SNAPIN_H
#define OD_CLI_SNAPIN_H

#include <stddef.h>

#include "oomdoc/snapshot.h"

/* Load the snapshot in path ("-" = stdin). On failure prints the error line and returns
 * NULL with *exit_code set (3 for bad input). The caller frees with od_snapshot_free. */
od_snapshot *od_cli_load_snapshot(const char *path, int *exit_code);

#endif
