/* inputs.h - the inputs named on a command line, opened here (files, stdin, progress) and
 * read by the library's one loader (read/load.h): doctor, report and trend take whatever
 * the user has through it. */
#ifndef OD_CLI_INPUTS_H
#define OD_CLI_INPUTS_H

#include <stddef.h>

#include "read/load.h"

/* Load paths[0..n) ("-" = stdin) into *out, an array of n the caller frees with
 * od_cli_inputs_free; each one's name is the path as shown ("<stdin>" for -). A regular
 * file can be opened again for a second pass (a BFC log's figures). Returns 0, or an exit
 * code after printing the error line that names the file (and *out is NULL). */
int od_cli_load_inputs(char *const *paths, size_t n, od_loaded **out);
void od_cli_inputs_free(od_loaded *ins, size_t n);

#endif
