/* nvmlcli.c - NVML library choice and PID names for `gpus` and `watch`. */
#include "nvmlcli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output.h"

od_nvml *od_cli_nvml_open(const char *cmd, const char *lib_opt, int *exit_code)
{
    const char *path = lib_opt;
    if (!path || !path[0])
        path = getenv("OOMDOC_NVML_LIB");
    od_nvml *n = NULL;
    od_error err;
    od_error_clear(&err);
    if (od_nvml_open(path, &n, &err) != OD_OK) {
        fprintf(stderr, "oomdoc: %s: %s\n", cmd, err.msg);
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
    /* A name is shown verbatim in text output: keep it printable. */
    for (char *p = buf; *p; p++)
        if ((unsigned char)*p < 0x20 || (unsigned char)*p == 0x7f)
            *p = '?';
    return 1;
}
