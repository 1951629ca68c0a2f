/* oomdoc.h - the public API of liboomdoc, behind one umbrella header:
 *
 *     #include <oomdoc/oomdoc.h>      cc prog.c $(pkg-config --cflags --libs oomdoc)
 *
 * What a caller may use: the status codes and error record (od.h), inputs from a file or
 * a memory buffer (input.h), the snapshot model and its loader (snapshot.h, with the
 * allocator policy of allocconf.h and the compact trace entries of tracestore.h), the
 * version, and the in-process CLI entry point that the Python package calls. Every other header of the library is internal and is not
 * installed. Ownership is stated next to each function: whatever a function returns
 * through an out-pointer the caller frees with the matching *_free / *_close (NULL is
 * fine for all of them). */
#ifndef OOMDOC_OOMDOC_H
#define OOMDOC_OOMDOC_H

#include <stddef.h>

#include "input.h"
#include "od.h"
#include "snapshot.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The library's release ("0.1.0"): a static string, never freed. */
OD_API const char *od_version(void);

/* Run one oomdoc subcommand in this process, as `oomdoc argv[0] argv[1] ...` would, with
 * what it prints to stdout and stderr captured into two NUL-terminated buffers that the
 * caller frees with od_cli_free (either out-pointer pair may be NULL to discard it).
 * Returns the command's exit code (0 done, 1 nothing to report, 2 usage, 3 bad input,
 * 4 no GPU, 70 internal; 2 also for a subcommand that cannot run in-process: watch,
 * gpus). Calls are serialized; while one runs, the process's C-level stdout and stderr
 * point at the capture, so other threads' printf output lands there too. */
OD_API int od_cli_run_capture(int argc, char **argv, char **out, size_t *out_len, char **err,
                       size_t *err_len);

/* doctor's text, printed from its --json document (json[0..len): what `oomdoc doctor
 * --json` prints), so a caller that ran doctor once has the text the command would have
 * printed, from the same diagnosis. *text receives a NUL-terminated buffer the caller
 * frees with od_cli_free (or free). Fails with OD_ERR_FORMAT (not a diagnosis document; err says
 * where), OD_ERR_NOMEM. */
OD_API od_status od_diagnosis_text_json(const char *json, size_t len, char **text, od_error *err);

/* Free a buffer returned by od_cli_run_capture (NULL is fine). */
OD_API void od_cli_free(void *buf);

#ifdef __cplusplus
}
#endif

#endif
