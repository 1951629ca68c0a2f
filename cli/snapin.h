/* snapin.h - loading a snapshot named on the command line (doctor, trend, diff). */
#ifndef OD_CLI_SNAPIN_H
#define OD_CLI_SNAPIN_H

#include <stddef.h>
#include <stdio.h>

#include "oomdoc/snapshot.h"

/* Load the snapshot in path ("-" = stdin). On failure prints the error line and returns
 * NULL with *exit_code set (3 for bad input). The caller frees with od_snapshot_free. */
od_snapshot *od_cli_load_snapshot(const char *path, int *exit_code);

/* A snapshot whose traces are read in passes (read/tracepass.h: a replay), with the file
 * and input the passes read from, which stay open until od_cli_streamed_close. */
typedef struct {
    od_snapshot *snap;
    FILE *f;
    struct od_input *in;
} od_cli_streamed;

/* Load path ("-" = stdin) streamed; when the pickle refers back to what a streaming read
 * lets go (OD_ERR_LIMIT), load it whole instead if the file can be read from its start
 * again. On failure prints the error line and returns 0 with *exit_code set; 1 when
 * loaded. */
int od_cli_load_streamed(const char *path, od_cli_streamed *out, int *exit_code);
/* Free the snapshot, then close its input and file (a zeroed one is fine). */
void od_cli_streamed_close(od_cli_streamed *s);

#endif
