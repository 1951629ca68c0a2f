/* gpus.h - the built-in table of accelerators `plan` can target: how much memory
 * PyTorch sees, what the CUDA context and library workspaces take, and for Apple
 * silicon how much of the unified RAM the GPU may use by default.
 *
 * Entries are static constants: nothing to free. */
#ifndef OD_GPUS_H
#define OD_GPUS_H

#include "oomdoc/od.h"

/* One cuBLAS workspace: torch allocates one per (thread's handle, stream) through the
 * caching allocator and keeps it (aten/src/ATen/cuda/CublasHandlePool.cpp,
 * parseChosenWorkspaceSize): 32 MiB (":4096:8") on compute capability 9.x, 10.x and
 * 12.x, ":4096:2:16:8" = 8.125 MiB before; cuBLASLt shares it unless
 * TORCH_CUBLASLT_UNIFIED_WORKSPACE=0. ROCm: 32 MiB, 128 MiB on gfx94x/gfx95x. The real
 * H200 runs show one 32 MiB block per thread that ran matmuls (snap_train_default: the
 * forward's, with Python frames, and the autograd engine's, without; snap_infer_llama:
 * one). */
#define OD_CUBLAS_WS_SM90 ((uint64_t)32 << 20)
#define OD_CUBLAS_WS_OLD (((uint64_t)8 << 20) + ((uint64_t)128 << 10))
#define OD_CUBLAS_WS_GFX94 ((uint64_t)128 << 20)

/* Whether a request of this size is one of the workspace sizes above. */
int od_cublas_workspace_size(uint64_t bytes);

typedef struct {
    char name[48];              /* canonical name, e.g. "h100-sxm" */
    char description[96];
    uint64_t memory_bytes;      /* what torch.cuda.mem_get_info() reports as total */
    uint64_t context_bytes;     /* CUDA context + kernels outside the caching allocator */
    uint64_t workspace_bytes;   /* one cuBLAS workspace (per thread and stream), inside the
                                 * caching allocator */
    int unified;                /* Apple unified memory: memory_bytes is the GPU's share */
    uint64_t ram_bytes;         /* unified: the machine's RAM */
    int bf16;                   /* bfloat16 tensor cores */
} od_gpu;

/* Look a name up: a key ("h100-sxm", "t4", "mi300x"), an alias ("a100", "4090",
 * "h100-80"), the name nvidia-smi or torch.cuda.get_device_name() prints ("NVIDIA H200",
 * "NVIDIA A100-SXM4-80GB", "Tesla T4"; case, spaces and dashes ignored), or Apple
 * "m2-max-96" / "apple-64" = RAM in GB. Fills *out and returns OD_OK, or OD_ERR_ARG
 * naming the three nearest keys. */
od_status od_gpu_lookup(const char *name, od_gpu *out, od_error *err);

/* The i-th GPU of the table (all discrete), smallest memory first; NULL past the last. */
const od_gpu *od_gpu_by_memory(size_t i);

/* A target given only by its memory (--memory): CUDA-like overheads assumed. */
void od_gpu_custom(uint64_t memory_bytes, od_gpu *out);

/* For unified-memory targets: how the GPU's share of RAM is set, one sentence. */
const char *od_gpu_unified_note(void);

#endif
