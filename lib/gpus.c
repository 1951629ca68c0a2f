/* gpus.c - the accelerator table. Totals are what PyTorch reports as total memory
 * (the driver keeps a few hundred MiB of the nominal size for itself): the H200 entry
 * and its overheads are measured (tests/data/measured/context_overhead.json), the
 * others are the totals their OOM messages print. */
#include "gpus.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MIB ((uint64_t)1 << 20)
#define GIBF(x) ((uint64_t)((x) * 1073741824.0))

/* CUDA context + cuBLAS/cuDNN/SDPA kernels as NVML sees them on the H200 (705 MB). */
#define CTX_MEASURED 705495040ULL
/* Hopper and newer: torch sizes each cuBLAS and cuBLASLt workspace at 32 MiB
 * (":4096:8"); older GPUs get ":4096:2:16:8" = 8.125 MiB each. */
#define WS_SM90 (64 * MIB)
#define WS_OLD ((uint64_t)(2 * 8.125 * MIB))

static const od_gpu TABLE[] = {
    {"a100-40", "NVIDIA A100 40GB", 42298834944ULL, 600 * MIB, WS_OLD, 0, 0, 1},
    {"a100-80", "NVIDIA A100 80GB", GIBF(79.15), 600 * MIB, WS_OLD, 0, 0, 1},
    {"h100-80", "NVIDIA H100 80GB", GIBF(79.11), CTX_MEASURED, WS_SM90, 0, 0, 1},
    {"h200", "NVIDIA H200 141GB (measured)", 150109880320ULL, CTX_MEASURED, WS_SM90, 0, 0, 1},
    {"l4", "NVIDIA L4 24GB", GIBF(22.05), 500 * MIB, WS_OLD, 0, 0, 1},
    {"l40s", "NVIDIA L40S 48GB", GIBF(44.42), 550 * MIB, WS_OLD, 0, 0, 1},
    {"rtx3090", "NVIDIA GeForce RTX 3090 24GB", GIBF(23.69), 450 * MIB, WS_OLD, 0, 0, 1},
    {"rtx4090", "NVIDIA GeForce RTX 4090 24GB", GIBF(23.65), 450 * MIB, WS_OLD, 0, 0, 1},
};

static const struct { const char *alias, *name; } ALIASES[] = {
    {"a100", "a100-80"}, {"a100-40gb", "a100-40"}, {"a100-80gb", "a100-80"},
    {"h100", "h100-80"}, {"h100-80gb", "h100-80"}, {"h200-141", "h200"},
    {"3090", "rtx3090"}, {"rtx-3090", "rtx3090"}, {"4090", "rtx4090"},
    {"rtx-4090", "rtx4090"}, {"l40s-48", "l40s"}, {"l4-24", "l4"},
};

const char *od_gpu_unified_note(void)
{
    return "macOS lets the GPU wire about 2/3 of RAM (3/4 above 36 GB) by default; raise it "
           "with 'sudo sysctl iogpu.wired_limit_mb=N' (macOS 14+), and PyTorch's own MPS cap "
           "with PYTORCH_MPS_HIGH_WATERMARK_RATIO";
}

/* Apple silicon: "apple-64", "m2-max-96", "m3-128", "m4-pro-48": the number is RAM in GB. */
static int apple(const char *name, od_gpu *out)
{
    size_t n = strlen(name);
    int is_apple = !strncasecmp(name, "apple-", 6) ||
                   ((name[0] == 'm' || name[0] == 'M') && isdigit((unsigned char)name[1]));
    if (!is_apple || n < 3 || !isdigit((unsigned char)name[n - 1]))
        return 0;
    const char *p = name + n;
    while (p > name && isdigit((unsigned char)p[-1]))
        p--;
    if (p == name || p[-1] != '-')
        return 0;
    long gb = strtol(p, NULL, 10);
    if (gb < 8 || gb > 1024)
        return 0;
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", name);
    snprintf(out->description, sizeof out->description, "Apple silicon, %ld GB unified memory", gb);
    out->ram_bytes = (uint64_t)gb * 1000000000ULL;
    /* recommendedMaxWorkingSetSize: ~2/3 of RAM up to 36 GB, ~3/4 above */
    out->memory_bytes = gb <= 36 ? out->ram_bytes / 3 * 2 : out->ram_bytes / 4 * 3;
    out->unified = 1;
    out->bf16 = 1;
    return 1;
}

od_status od_gpu_lookup(const char *name, od_gpu *out, od_error *err)
{
    const char *want = name;
    for (size_t i = 0; i < sizeof ALIASES / sizeof ALIASES[0]; i++)
        if (!strcasecmp(name, ALIASES[i].alias))
            want = ALIASES[i].name;
    for (size_t i = 0; i < sizeof TABLE / sizeof TABLE[0]; i++) {
        if (!strcasecmp(want, TABLE[i].name)) {
            *out = TABLE[i];
            return OD_OK;
        }
    }
    if (apple(name, out))
        return OD_OK;
    return od_fail(err, OD_ERR_ARG,
                   "unknown GPU '%s' (known: a100-40, a100-80, h100-80, h200, l4, l40s, rtx3090, "
                   "rtx4090, Apple as m2-max-96 or apple-64 = RAM in GB; or use --memory)", name);
}

void od_gpu_custom(uint64_t memory_bytes, od_gpu *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "custom");
    snprintf(out->description, sizeof out->description, "a device with the given memory");
    out->memory_bytes = memory_bytes;
    out->context_bytes = 600 * MIB;
    out->workspace_bytes = WS_SM90;
    out->bf16 = 1;
}

/* TABLE's entries, smallest memory first (test_plan checks the order). */
static const unsigned char BY_MEMORY[] = {4, 7, 6, 0, 5, 2, 1, 3};

const od_gpu *od_gpu_by_memory(size_t i)
{
    return i < sizeof BY_MEMORY ? &TABLE[BY_MEMORY[i]] : NULL;
}
