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

/* Smallest memory first: od_gpu_by_memory walks the table in this order (test_plan
 * checks it), so a new entry goes where its memory puts it. */
static const od_gpu TABLE[] = {
    /* "GPU 0 has a total capacity of 14.56 GiB" (torch 2.x OOMs on Tesla T4 in public
     * issues; 15360 MiB in nvidia-smi); no bf16 on Turing */
    {"t4", "Tesla T4 (16 GB)", GIBF(14.56), 450 * MIB, WS_OLD, 0, 0, 0},
    /* 15.77 GiB: the usual total of a Tesla V100-SXM2-16GB (16160 MiB in nvidia-smi; not
     * checked against a captured message here); no bf16 on Volta */
    {"v100-16", "Tesla V100 16GB", GIBF(15.77), 450 * MIB, WS_OLD, 0, 0, 0},
    /* "a total capacty of 21.99 GiB" (an A10's torch 2.x OOM in a public issue; A10 and
     * A10G both show 23028 MiB in nvidia-smi) */
    {"a10g", "NVIDIA A10G (24 GB)", GIBF(21.99), 500 * MIB, WS_OLD, 0, 0, 1},
    /* 23034 MiB in nvidia-smi; "22.05 GiB total capacity" */
    {"l4", "NVIDIA L4 24GB", GIBF(22.05), 500 * MIB, WS_OLD, 0, 0, 1},
    /* "23.65 GiB total capacity" (24564 MiB in nvidia-smi) */
    {"rtx4090", "NVIDIA GeForce RTX 4090 24GB", GIBF(23.65), 450 * MIB, WS_OLD, 0, 0, 1},
    /* "23.69 GiB total capacity" */
    {"rtx3090", "NVIDIA GeForce RTX 3090 24GB", GIBF(23.69), 450 * MIB, WS_OLD, 0, 0, 1},
    /* 31.75 GiB: the usual total of a Tesla V100-SXM2-32GB (32510 MiB in nvidia-smi; not
     * checked against a captured message here); no bf16 on Volta */
    {"v100-32", "Tesla V100 32GB", GIBF(31.75), 450 * MIB, WS_OLD, 0, 0, 0},
    /* A100-SXM4-40GB / A100-PCIE-40GB: 40960 MiB in nvidia-smi, 39.39 GiB in torch */
    {"a100-40", "NVIDIA A100 40GB", 42298834944ULL, 600 * MIB, WS_OLD, 0, 0, 1},
    /* "44.42 GiB total capacity" (46068 MiB in nvidia-smi) */
    {"l40s", "NVIDIA L40S 48GB", GIBF(44.42), 550 * MIB, WS_OLD, 0, 0, 1},
    /* 47.54 GiB: the usual total of an NVIDIA RTX A6000 (49140 MiB in nvidia-smi; not
     * checked against a captured message here) */
    {"a6000", "NVIDIA RTX A6000 48GB", GIBF(47.54), 550 * MIB, WS_OLD, 0, 0, 1},
    /* one GCD, which torch sees as one device: "a total capacity of 63.98 GiB" (a 64 GB
     * HIP device's OOM in a public issue); HIP's context and hipBLASLt workspace taken as
     * CUDA's */
    {"mi250x", "AMD Instinct MI250X (one of its two GCDs, 64 GB)", GIBF(63.98), 600 * MIB, WS_SM90, 0, 0, 1},
    /* "total capacity of 79.11 GiB" (NVIDIA H100 80GB HBM3, 81559 MiB in nvidia-smi) */
    {"h100-sxm", "NVIDIA H100 80GB HBM3 (SXM)", GIBF(79.11), CTX_MEASURED, WS_SM90, 0, 0, 1},
    /* NVIDIA H100 PCIe: the same 81559 MiB in nvidia-smi as the SXM part */
    {"h100-pcie", "NVIDIA H100 PCIe 80GB", GIBF(79.11), CTX_MEASURED, WS_SM90, 0, 0, 1},
    /* "79.15 GiB total capacity" (NVIDIA A100-SXM4-80GB, 81920 MiB in nvidia-smi) */
    {"a100-80", "NVIDIA A100 80GB", GIBF(79.15), 600 * MIB, WS_OLD, 0, 0, 1},
    /* "a total capacity of 93.00 GiB" (an H100 NVL 94GB's OOM in a public issue) */
    {"h100-nvl", "NVIDIA H100 NVL 94GB", GIBF(93.00), CTX_MEASURED, WS_SM90, 0, 0, 1},
    /* measured: torch.cuda.mem_get_info() total on NVIDIA H200 (143771 MiB in nvidia-smi) */
    {"h200", "NVIDIA H200 141GB (measured)", 150109880320ULL, CTX_MEASURED, WS_SM90, 0, 0, 1},
    /* 178.35 GiB: NVIDIA B200's 183359 MiB in nvidia-smi less the driver's share (derived,
     * not checked against a captured message) */
    {"b200", "NVIDIA B200 180GB", GIBF(178.35), CTX_MEASURED, WS_SM90, 0, 0, 1},
    /* 191.98 GiB: AMD Instinct MI300X's 192 GiB HBM3 less the driver's share (derived,
     * not checked against a captured message) */
    {"mi300x", "AMD Instinct MI300X 192GB", GIBF(191.98), 600 * MIB, WS_GFX94, 0, 0, 1},
};
#define N_TABLE (sizeof TABLE / sizeof TABLE[0])

/* Other names for the entries: older keys, short forms, and the names nvidia-smi,
 * torch.cuda.get_device_name() and rocm-smi print. Compared after lowercasing and
 * dropping everything but letters and digits ("NVIDIA A100-SXM4-80GB" = "nvidiaa100sxm480gb"). */
static const struct { const char *alias, *name; } ALIASES[] = {
    {"h100-80", "h100-sxm"}, {"h100", "h100-sxm"}, {"h100-80gb", "h100-sxm"}, {"h100-hbm3", "h100-sxm"},
    {"NVIDIA H100 80GB HBM3", "h100-sxm"}, {"NVIDIA H100 PCIe", "h100-pcie"},
    {"NVIDIA H100 NVL", "h100-nvl"}, {"h100-94", "h100-nvl"},
    {"a100", "a100-80"}, {"a100-40gb", "a100-40"}, {"a100-80gb", "a100-80"},
    {"NVIDIA A100-SXM4-80GB", "a100-80"}, {"NVIDIA A100 80GB PCIe", "a100-80"},
    {"NVIDIA A100-PCIE-80GB", "a100-80"}, {"NVIDIA A100-SXM4-40GB", "a100-40"},
    {"NVIDIA A100-PCIE-40GB", "a100-40"},
    {"h200-141", "h200"}, {"NVIDIA H200", "h200"}, {"NVIDIA H200 NVL", "h200"},
    {"NVIDIA B200", "b200"},
    {"3090", "rtx3090"}, {"rtx-3090", "rtx3090"}, {"NVIDIA GeForce RTX 3090", "rtx3090"},
    {"4090", "rtx4090"}, {"rtx-4090", "rtx4090"}, {"NVIDIA GeForce RTX 4090", "rtx4090"},
    {"l40s-48", "l40s"}, {"NVIDIA L40S", "l40s"}, {"l4-24", "l4"}, {"NVIDIA L4", "l4"},
    {"Tesla T4", "t4"}, {"NVIDIA A10G", "a10g"}, {"a10", "a10g"}, {"NVIDIA A10", "a10g"},
    {"v100", "v100-32"}, {"Tesla V100-SXM2-16GB", "v100-16"}, {"Tesla V100-PCIE-16GB", "v100-16"},
    {"Tesla V100-SXM2-32GB", "v100-32"}, {"Tesla V100-PCIE-32GB", "v100-32"},
    {"Tesla V100S-PCIE-32GB", "v100-32"}, {"NVIDIA RTX A6000", "a6000"}, {"rtx-a6000", "a6000"},
    {"AMD Instinct MI250X", "mi250x"}, {"AMD Instinct MI250X/MI250", "mi250x"},
    {"AMD Instinct MI300X", "mi300x"},
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
