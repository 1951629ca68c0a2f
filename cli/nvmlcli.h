/* nvmlcli.h - what `gpus` and `watch` share around NVML: choosing the library (the
 * --nvml-lib option, else the OOMDOC_NVML_LIB environment variable, else the driver's
 * libnvidia-ml.so.1), and naming the processes NVML reports. */
#ifndef OD_CLI_NVMLCLI_H
#define OD_CLI_NVMLCLI_H

#include <stddef.h>
#include <stdint.h>

#include "read/nvml.h"

/* Open NVML; on failure print one line "oomdoc: CMD: why" and return NULL with
 * *exit_code = 4 (GPU/NVML unavailable), or 3 when the library named by path is not a
 * regular file (a FIFO, a device: refused before dlopen, which would block on it). Close
 * with od_nvml_close. */
od_nvml *od_cli_nvml_open(const char *cmd, const char *lib_opt, int *exit_code);

/* The command name of PID from /proc, as the process set it (untrusted: escape it for
 * text). buf gets "" and 0 is returned when this PID namespace has no such process: NVML
 * reports host PIDs, so inside a container the processes of other containers, and often
 * our own, cannot be resolved. */
int od_cli_pid_name(uint32_t pid, char *buf, size_t size);

#endif
