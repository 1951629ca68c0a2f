/* gpus.c - the accelerator table. Totals are what PyTorch reports as total memory
 * (torch.cuda.get_device_properties().total_memory: the driver keeps a few hundred MiB
 * of the nominal size for itself). The H200 entry and its overheads are measured
 * (tests/data/measured/context_overhead.json); every other total is the "total
 * capacity" its CUDA/HIP OOM messages print, cited per entry. */
#include "model/gpus.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MIB ((uint64_t)1 << 20)
#define GIBF(x) ((uint64_t)((x) * 1073741824.0))

/* CUDA context + cuBLAS/cuDNN/SDPA kernels as NVML sees them on the H200 (705 MB). */
#define CTX_MEASURED 705495040ULL
/* The estimate counts how many workspaces (threads) a task uses (gpus.h). */
#define WS_SM90 OD_CUBLAS_WS_SM90
#define WS_OLD OD_CUBLAS_WS_OLD
#define WS_GFX94 OD_CUBLAS_WS_GFX94

int od_cublas_workspace_size(uint64_t bytes)
{
    return bytes == OD_CUBLAS_WS_SM90 || bytes == OD_CUBLAS_WS_OLD || bytes == OD_CUBLAS_WS_GFX94;
}

/* The table (model/gpus.def), smallest memory first. */
static const od_gpu TABLE[] = {
#define OD_GPU(key, desc, mem, ctx, ws, bf16) {key, desc, mem, ctx, ws, 0, 0, bf16},
#include "model/gpus.def"
#undef OD_GPU
};
#define N_TABLE (sizeof TABLE / sizeof TABLE[0])

/* Other names for the entries (model/gpus.def). */
static const struct { const char *alias, *name; } ALIASES[] = {
#define OD_GPU_ALIAS(alias, key) {alias, key},
#include "model/gpus.def"
#undef OD_GPU_ALIAS
};

/* Lowercase letters and digits of s, at most n-1 of them. */
static void norm(const char *s, char *out, size_t n)
{
    size_t k = 0;
    for (; *s && k + 1 < n; s++)
        if (isalnum((unsigned char)*s))
            out[k++] = (char)tolower((unsigned char)*s);
    out[k] = 0;
}

static const od_gpu *by_name(const char *name)
{
    char want[96], have[96];
    norm(name, want, sizeof want);
    if (!want[0])
        return NULL;
    for (size_t i = 0; i < N_TABLE; i++) {
        norm(TABLE[i].name, have, sizeof have);
        if (!strcmp(want, have))
            return &TABLE[i];
    }
    for (size_t i = 0; i < sizeof ALIASES / sizeof ALIASES[0]; i++) {
        norm(ALIASES[i].alias, have, sizeof have);
        if (!strcmp(want, have))
            return by_name(ALIASES[i].name);
    }
    return NULL;
}

/* Levenshtein distance of two short strings (both under 96 bytes). */
static size_t distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b), row[96];
    if (la >= 96 || lb >= 96)
        return 96;
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (row[j] + 1 < best)
                best = row[j] + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

/* The three entries whose key or any alias is nearest to name, as "a, b, c". */
static void nearest(const char *name, char *buf, size_t n)
{
    char want[96], have[96];
    size_t best[N_TABLE];
    norm(name, want, sizeof want);
    for (size_t i = 0; i < N_TABLE; i++) {
        norm(TABLE[i].name, have, sizeof have);
        best[i] = distance(want, have);
    }
    for (size_t i = 0; i < sizeof ALIASES / sizeof ALIASES[0]; i++) {
        const od_gpu *g = by_name(ALIASES[i].name);
        norm(ALIASES[i].alias, have, sizeof have);
        size_t d = distance(want, have), k = (size_t)(g - TABLE);
        if (d < best[k])
            best[k] = d;
    }
    buf[0] = 0;
    int used[N_TABLE] = {0};
    for (int r = 0; r < 3; r++) {
        size_t pick = N_TABLE;
        for (size_t i = 0; i < N_TABLE; i++)
            if (!used[i] && (pick == N_TABLE || best[i] < best[pick]))
                pick = i;
        used[pick] = 1;
        size_t l = strlen(buf);
        snprintf(buf + l, n - l, "%s%s", r ? ", " : "", TABLE[pick].name);
    }
}

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
    const od_gpu *g = by_name(name);
    if (g) {
        *out = *g;
        return OD_OK;
    }
    if (apple(name, out))
        return OD_OK;
    char near[96];
    nearest(name, near, sizeof near);
    return od_fail(err, OD_ERR_ARG,
                   "unknown GPU '%.60s' (nearest: %s; `oomdoc plan --help` lists all; Apple as "
                   "m2-max-96 = RAM in GB; or use --memory)", name, near);
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

/* The table is kept in memory order (see TABLE). */
const od_gpu *od_gpu_by_memory(size_t i)
{
    return i < N_TABLE ? &TABLE[i] : NULL;
}
