/* nvmlcli.c - NVML library choice and PID names for `gpus` and `watch`. */
#include "nvmlcli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "output.h"

od_nvml *od_cli_nvml_open(const char *cmd, const char *lib_opt, int *exit_code)
{
    const char *path = lib_opt, *from = "--nvml-lib";
    if (!path || !path[0])
        path = getenv("OOMDOC_NVML_LIB"), from = "OOMDOC_NVML_LIB";
    /* A path is checked as every input is: dlopen would wait forever on a FIFO, and read a
     * device. (A bare name is looked up by dlopen in the library directories.) */
    struct stat st;
    if (path && strchr(path, '/') && stat(path, &st) == 0) {
        const char *why = od_cli_regular_file_problem(path);
        if (why) {
            fprintf(stderr, "oomdoc: %s: %s %s: %s\n", cmd, from, od_cli_name(path), why);
            *exit_code = OD_EXIT_INPUT;
            return NULL;
        }
    }
    od_nvml *n = NULL;
    od_error err;
    od_error_clear(&err);
    if (od_nvml_open(path, &n, &err) != OD_OK) {
        fprintf(stderr, "oomdoc: %s: %s\n", cmd, od_cli_name(err.msg));
        *exit_code = od_cli_exit_code(err.status);
        return NULL;
    }
    return n;
}

int od_cli_pid_name(uint32_t pid, char *buf, size_t size)
{
    char path[64];
    buf[0] = 0;
    snprintf(path, sizeof path, "/proc/%u/comm", (unsigned)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    if (!fgets(buf, (int)size, f))
        buf[0] = 0;
    fclose(f);
    buf[strcspn(buf, "\n")] = 0;
    return 1; /* text output escapes it (od_cli_esc), JSON repairs its UTF-8 */
}
