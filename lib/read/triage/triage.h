/* triage.h - find out-of-memory reports in arbitrary text (logs, tracebacks, notebooks'
 * output) and say what kind of OOM each one is.
 *
 * Recognized: PyTorch CUDA OOM messages in every historical wording (1.x "(GPU N; X total
 * capacity; ...)", 1.10-2.0 with the max_split_size_mb hint, 2.1's "total capacty" typo,
 * 2.2+ "Of the allocated memory ...", "Process P has ...", "... allowed"), the ROCm build's
 * "HIP out of memory", Apple MPS, TensorFlow (ResourceExhaustedError, "OOM when allocating
 * tensor with shape[...]", the BFC allocator's "ran out of memory ... (rounded to N)" line
 * and its "Stats:" dump), JAX/XLA RESOURCE_EXHAUSTED; torch.cuda.memory_summary() tables;
 * memory_stats() dicts (PyTorch and JAX keys) dumped as JSON, or printed by Python anywhere in
 * the text: OrderedDict([(k, v), ...]) (<= 3.11), OrderedDict({k: v, ...}) (3.12+), a dict(),
 * pprint's one entry a line; nvidia-smi output (default table, -q -d MEMORY, --query-gpu CSV).
 *
 * od_triage_parse returns a result the caller frees with od_triage_free (NULL is fine);
 * every string and array inside belongs to the result. */
#ifndef OD_TRIAGE_H
#define OD_TRIAGE_H

#include "base/torchver.h"
#include "oomdoc/od.h"

/* The frameworks a report names: frameworks.def, one row each (values never change). */
typedef enum {
#define FRAMEWORK(id, name, setting, torch_like) id,
#include "read/triage/frameworks.def"
#undef FRAMEWORK
} od_framework;

/* Which wording a report was read from, when it is not a plain framework OOM message;
 * the verdict rule and the explanation depend on it. */
typedef enum {
    OD_KIND_ALLOCATOR,       /* a framework allocator's OOM message (the default) */
    OD_KIND_DRIVER,          /* "CUDA error: out of memory": outside the caching allocator */
    OD_KIND_LIBRARY,         /* cuBLAS / cuDNN / NCCL failed to allocate outside the pool */
    OD_KIND_HOST_RAM,        /* DefaultCPUAllocator, Windows "not enough memory" */
    OD_KIND_HOST_KILLED,     /* the OOM killer: signal Killed, exit code -9, dmesg */
    OD_KIND_HOST_SHM,        /* shared memory (/dev/shm) exhausted: bus error */
    OD_KIND_VLLM_CACHE,      /* "No available memory for the cache blocks" */
    OD_KIND_VLLM_KV_LEN,     /* "max seq len ... larger than ... KV cache" */
    OD_KIND_VLLM_STARTUP,    /* "Free memory on device ... less than desired GPU memory utilization" */
    OD_KIND_XLA_COMPILE,     /* XLA TPU compile time: "Used X of Y hbm" */
    OD_KIND_XLA_RESERVE,     /* PyTorch/XLA "Attempting to reserve X ... There are Y free" */
    OD_KIND_GENERIC,         /* another runtime's own words for a failed device allocation */
    OD_KIND_KERNEL_RESOURCES,/* a kernel's per-block shared memory (Triton), not device memory */
    OD_KIND_ENGINE_KV        /* an inference engine's KV budget under its memory-fraction setting */
} od_oom_kind;

typedef enum {
    OD_OOM_UNKNOWN,        /* the message lacks the figures to decide */
    OD_OOM_FRAGMENTATION,  /* the memory existed, but no block was contiguous */
    OD_OOM_CAP_LIMIT,      /* a per-process cap was hit while the device had room */
    OD_OOM_OTHER_PROCESSES,/* other processes hold at least the missing amount (a driver report
                              without figures: nvidia-smi beside it shows two processes or more
                              holding memory on its GPU) */
    OD_OOM_CAPACITY,       /* the work does not fit */
    OD_OOM_HOST_MEMORY     /* CPU RAM, the OOM killer or shared memory, not the GPU (kept last:
                              existing switches keep their values) */
} od_oom_verdict;

/* Which figures a report carries (bits of od_oom_report.have). */
enum {
    OD_HAVE_REQUESTED = 1 << 0,
    OD_HAVE_CAPACITY = 1 << 1,
    OD_HAVE_FREE = 1 << 2,
    OD_HAVE_ALLOWED = 1 << 3,
    OD_HAVE_ALLOCATED = 1 << 4,
    OD_HAVE_RESERVED_UNALLOC = 1 << 5,
    OD_HAVE_PROCESS = 1 << 6,
    OD_HAVE_DEVICE = 1 << 7
};

typedef struct {
    uint64_t pid;
    uint64_t bytes;
} od_oom_process;

typedef struct {
    od_framework framework;
    od_oom_kind kind;
    char library[24];       /* surrounding context ("deepspeed", "torchrun", "shm", ...), or "" */
    uint64_t offset;        /* byte offset of the report's first line in the input */
    uint64_t line;          /* 1-based line number of that line */
    unsigned have;          /* OD_HAVE_* bits: which of the figures below were printed */
    int device;             /* GPU index when OD_HAVE_DEVICE */
    uint64_t requested_bytes;
    uint64_t capacity_bytes;             /* device total (TF/XLA: the allocator's limit) */
    uint64_t free_bytes;                 /* device-wide free memory */
    uint64_t allowed_bytes;              /* per-process cap (MPS: max allowed watermark) */
    uint64_t allocated_bytes;            /* allocated by the framework */
    uint64_t reserved_unallocated_bytes; /* cached by the allocator but not handed out */
    uint64_t process_bytes;              /* this process, incl. non-framework memory */
    od_oom_process *other;               /* other processes on the device, in message order */
    size_t n_other;
    int rounded;            /* figures were printed rounded to two decimals */
    int request_is_segment; /* the request figure is the allocator's rounded segment size */
    int xla;                /* TF/XLA BFC-style report (environment hints differ) */
    char dtype[24];         /* TF: the tensor's dtype, "" when not printed */
    int dtype_from_op;      /* ... read from the op's T attribute on the next line (TF 1.x) */
    unsigned occurrences;   /* how many times this same report appeared in a row */
    int self_from_other;    /* a "Process N has X" line was this process (containers) */
    int spill;              /* allocated above capacity: Windows/WSL shared system memory */
    int msg_hint_expandable;/* the message itself suggests expandable_segments */
    int have_torch_range;   /* PyTorch CUDA/HIP: the message's wording dates it ... */
    od_torch_range torch_range; /* ... to these releases (od_torch_infer_message) */
    int garbage_figure;     /* a figure of 17179869184.00 GiB (2^64 bytes) was printed and ignored:
                               NVML/CUDA's garbage on Windows/WSL, or "no limit" */
    uint64_t max_model_len, kv_cache_tokens; /* vLLM: the model's max seq len, the KV cache's
                                                token capacity (OD_KIND_VLLM_KV_LEN) */
    unsigned smi_processes;  /* a driver report without figures (OD_KIND_DRIVER): how many processes
                                the nvidia-smi process table in the same text shows holding memory on
                                its GPU (the report's GPU when it names one), 0 when none was read */
    uint64_t smi_processes_bytes; /* their memory, summed */
    unsigned backoff_steps;  /* TF's stream executor: lines after the first that asked 10% less
                                (BFCAllocator backing off from its pool's size) */
    uint64_t backoff_last_bytes; /* the last size it asked for */
    uint64_t log_pid, log_pid_last; /* the process a log prefix ("(pid=4241) ...") names on the report's
                                first line, and on its last; 0 when none */
    unsigned log_processes;  /* how many other processes' prefixed lines joined the report (a
                                scheduler's workers failing on one GPU at once), 0: none */
    uint64_t program_bytes;  /* XLA: the compiled program's "total allocation" (BufferAssignment
                                stats), 0 when not printed */
    uint64_t startup_total_bytes, startup_free_bytes; /* TF: the device's memory and what was free
                                when TF started (its start-up lines), 0 when not printed */
    unsigned fraction_permille; /* a memory-fraction setting below 1 the message says caps the pool
                                (Paddle's FLAGS_fraction_of_gpu_memory_to_use), in thousandths; 0: none */
    uint64_t cache_error_bytes; /* how far the reserved-but-unallocated figure may be off: it is the
                                difference of two figures printed to two decimals (1.x's totals) */
    int mention;             /* read from a quotation of the wording (a traceback's source line),
                                not the message itself */

    /* The verdict and the numbers behind it (valid when the needed figures exist). */
    od_oom_verdict verdict;
    int have_headroom;
    uint64_t headroom_bytes;   /* (cap or capacity) - (allocated + reserved_unallocated) */
    uint64_t available_bytes;  /* reserved_unallocated + headroom */
    uint64_t missing_bytes;    /* requested - available, when positive */
    uint64_t others_bytes;     /* sum of other processes' memory */
    int near_full;             /* capacity although the free memory would hold the request: the
                                  framework's allocation is >= 90% of the limit (fragmentation is
                                  only the proximate cause) */
    int stranded_small;        /* capacity although cache + free would hold the request: PyTorch's
                                  cache is smaller than it and under 5% of the limit */
    int free_exceeds_request;  /* PyTorch without a cap: the device had clearly more free than the
                                  request when the message was written (verdict unknown) */
    int free_barely_covers;    /* ... only just more (within 64 MiB or 1/16 of the request): the
                                  device is full (capacity) */
    int elsewhere_dominates;   /* other_processes because more of the device is held outside the
                                  job than by it (held_elsewhere_bytes), not by the missing amount */
    int stray_contexts;        /* two or more other processes hold about the same small amount (within
                                  25%, at most 2 GiB each): other ranks' CUDA contexts on this GPU */
    uint64_t held_elsewhere_bytes; /* capacity - free - this job (its process figure, else its pool),
                                  at least the listed processes' sum; 0 without the figures */
    int cap_blocks;            /* cap_limit although the cache held the request: too little was left
                                  under the cap (the figures' rounding allowed for) to grow the pool */
    int first_pool;            /* unknown: the request is TF's first pool, about all the memory its
                                  start-up lines show free (it retries smaller) */
    int at_context;            /* a driver refusal at CUDA context creation (cuCtxCreate) */
    int held_at_startup;       /* other_processes: TF's start-up lines show the device mostly held
                                  before it started (held_elsewhere_bytes) */
    int size_bug;              /* the request alone exceeds the whole device */
    int size_corrupt;          /* the request is absurd (>= 1 PiB): a corrupted size */
} od_oom_report;

/* A torch.cuda.memory_summary() table. Figures are truncated to the printed unit. */
typedef struct {
    uint64_t offset, line;
    int device;
    uint64_t allocated_bytes, allocated_peak_bytes;
    uint64_t reserved_bytes, reserved_peak_bytes;
    uint64_t non_releasable_bytes; /* inactive split blocks: stranded by fragmentation */
    int have_non_releasable;       /* its row was in the table (a paste cut short may lack it) */
    uint64_t ooms, retries;
    int have_counts;
    od_oom_verdict verdict;  /* fragmentation when non-releasable ~ reserved-unallocated and
                                OOMs were counted; else unknown */
} od_mem_summary;

/* A memory_stats() dict, dumped as JSON or printed by Python: PyTorch (torch.cuda.memory_stats)
 * or JAX (device.memory_stats). Missing figures have their bit clear in have. */
enum {
    OD_MS_ALLOCATED = 1 << 0, OD_MS_ALLOCATED_PEAK = 1 << 1, OD_MS_RESERVED = 1 << 2,
    OD_MS_RESERVED_PEAK = 1 << 3, OD_MS_INACTIVE = 1 << 4, OD_MS_OOMS = 1 << 5,
    OD_MS_RETRIES = 1 << 6, OD_MS_LIMIT = 1 << 7, OD_MS_LARGEST_FREE = 1 << 8
};
typedef struct {
    int jax;                /* 1: JAX keys (bytes_in_use, bytes_limit, ...) */
    unsigned have;
    uint64_t allocated_bytes, allocated_peak_bytes, reserved_bytes, reserved_peak_bytes;
    uint64_t inactive_split_bytes, ooms, retries, limit_bytes, largest_free_block_bytes;
    od_oom_verdict verdict;  /* as for od_mem_summary (JAX: largest free block < what is free) */
    int cut_short;           /* a printed dict that stops before its close (a paste cut short):
                                the entries after the last whole one are missing, not guessed */
} od_mem_stats;

/* One GPU as nvidia-smi shows it. */
typedef struct {
    int index;              /* -1 when the output does not number GPUs (-q) */
    char name[64];
    char bus_id[32];
    uint64_t total_bytes, used_bytes, free_bytes, reserved_bytes;
    int have_free, have_reserved;
} od_smi_gpu;

typedef struct {
    int gpu;
    uint64_t pid;
    char name[64];
    uint64_t bytes;
} od_smi_process;

typedef struct {
    od_oom_report *reports;
    size_t n_reports;
    od_mem_summary *summaries;
    size_t n_summaries;
    od_mem_stats *stats;    /* the whole input as a memory_stats JSON dict, else the last
                               memory_stats dict Python printed in it; NULL: none */
    od_smi_gpu *gpus;
    size_t n_gpus;
    od_smi_process *procs;
    size_t n_procs;
    const char *smi_format; /* "table", "query", "csv" or NULL */
    od_oom_verdict smi_verdict; /* other_processes when the process table shows more than one
                                   process on a GPU that is nearly full; else unknown */
} od_triage;

/* Scan text[0..len) (need not be NUL-terminated) for everything above. Finding nothing
 * is not an error: the result is empty. Fails with OD_ERR_NOMEM, or OD_ERR_LIMIT on a run of
 * OD_LINE_MAX_BYTES without a line break (lines.h). */
od_status od_triage_parse(const char *text, size_t len, od_triage **out, od_error *err);
void od_triage_free(od_triage *t);
/* The same scan over the text held whole, without choosing the lines first: what the
 * stream below must equal, for the tests that check it. */
od_status od_triage_parse_whole(const char *text, size_t len, od_triage **out, od_error *err);

/* The scan fed in chunks of any size (od_triage_parse feeds it once): memory is the lines
 * that can matter (those naming an OOM, a table the scanner reads, their neighbours) and a
 * memory_stats() dump of up to 16 MiB, never the log (a memory_stats dict Python printed is read
 * as its lines pass, by the reader the whole-text scan uses). od_triage_stream_new returns a
 * stream the caller frees with od_triage_stream_free (NULL is fine). Feeding fails with
 * OD_ERR_LIMIT on a run of OD_LINE_MAX_BYTES without a line break (lines.h: not text),
 * OD_ERR_NOMEM; the failure is final and later calls return it again. */
typedef struct od_triage_stream od_triage_stream;
od_status od_triage_stream_new(od_triage_stream **out, od_error *err);
od_status od_triage_stream_feed(od_triage_stream *ts, const void *data, size_t n, od_error *err);
/* End of input: *out receives the result (free with od_triage_free), as od_triage_parse
 * of the whole text gives it. */
od_status od_triage_stream_finish(od_triage_stream *ts, od_triage **out, od_error *err);
void od_triage_stream_free(od_triage_stream *ts);
/* The bytes the stream's buffers hold now (what it costs, for the tests that bound it). */
size_t od_triage_stream_held_bytes(const od_triage_stream *ts);

/* Decide the verdict of r from its figures (od_triage_parse already does this; exposed
 * for tests and callers that build reports by hand). */
void od_triage_classify(od_oom_report *r);

/* Stable lower-case names used in JSON ("pytorch-cuda", "fragmentation", ...). */
const char *od_framework_name(od_framework f);
/* The environment variable that configures f's device memory ("PYTORCH_CUDA_ALLOC_CONF"), or
 * NULL; whether PyTorch's caching-allocator rules apply to f's reports (CUDA and ROCm builds). */
const char *od_framework_setting(od_framework f);
int od_framework_torch_like(od_framework f);
const char *od_oom_verdict_name(od_oom_verdict v);
const char *od_oom_kind_name(od_oom_kind k);

/* The reason sentence for reports whose verdict comes from their wording rather than from
 * the pool arithmetic (host memory, vLLM, XLA, a report with only a request, the 90% rule).
 * Writes into buf and returns 1; returns 0 (buf untouched) for the others, whose reason
 * od_oom_reason gives. */
int od_triage_reason(const od_oom_report *r, char *buf, size_t size);

/* Size of one element of a TensorFlow dtype as its messages print it ("float", "half",
 * "bfloat16", "int64", ...); 0 when unknown. */
unsigned od_tf_dtype_size(const char *name, size_t len);


#endif
