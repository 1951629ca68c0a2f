/* cmd_triage.c - `oomdoc triage [FILE|-] [--json]`: find OOM reports in a log and say
 * what kind of OOM each one is; also reads memory_summary() tables, memory_stats() dicts
 * (JSON or Python's print) and nvidia-smi output. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/advice.h"
#include "base/units.h"
#include "commands.h"
#include "output.h"
#include "read/triage/triage.h"
#include "render/triage_doc.h"
#include "textin.h"

static void usage(void)
{
    printf("Usage: oomdoc triage [FILE|-] [--json]\n\n"
           "Find out-of-memory reports in a log (tracebacks and all) and classify each one:\n"
           "fragmentation, cap_limit, other_processes, capacity, host_memory or unknown, with\n"
           "the figures that justify it. Reads PyTorch CUDA/ROCm/MPS/XLA messages of every\n"
           "release (cudaMallocAsync too), TensorFlow and JAX/XLA (GPU, TPU compile time),\n"
           "vLLM, cuBLAS/cuDNN/NCCL statuses, ONNX Runtime's arena, host RAM (the OOM\n"
           "killer, exit code -9, DefaultCPUAllocator, shared memory), PyTorch 0.x and Lua\n"
           "Torch's THC, and any other runtime's own words for a failed allocation (ggml,\n"
           "CTranslate2, PaddlePaddle, TensorRT, CuPy, Triton, ...), torch.cuda.memory_summary()\n"
           "tables, memory_stats() dicts (saved as JSON, or printed by Python: OrderedDict,\n"
           "dict(), pprint), and nvidia-smi output (default table, -q -d MEMORY,\n"
           "--query-gpu CSV). Gzipped input is read transparently.\n"
           "Without FILE, or with -, reads standard input.\n\n"
           "Options:\n"
           "  --json    machine-readable output (schema_version 1, sizes in bytes)\n"
           "  --help    this text\n\n"
           "Example:\n"
           "  oomdoc triage tests/data/messages/torch22_other_process.txt\n\n"
           "Figures printed with two decimals are converted exactly as printed\n"
           "(2.00 GiB = 2*2^30 bytes), so they are rounded.\n\n" OD_EXIT_CODES_HELP
           "Exit 1 here means: no OOM report and nothing else recognized in the input.\n");
}

static void row(const char *label, int have, uint64_t v)
{
    char b[32];
    if (have)
        printf("  %-28s %s\n", label, od_format_iec(v, b, sizeof b));
}

static void print_report(const od_oom_report *r, size_t i, size_t n)
{
    char b[32], reason[512];
    printf("%sOOM report %zu of %zu%s: %s", od_c_bold, i + 1, n, od_c_reset, od_framework_name(r->framework));
    if (r->library[0])
        printf(" (%s)", r->library);
    if (r->have & OD_HAVE_DEVICE)
        printf(", GPU %d", r->device);
    printf(" (line %llu)", (unsigned long long)r->line);
    if (r->occurrences > 1)
        printf(", seen %u times", r->occurrences);
    printf("\n");
    row("requested", r->have & OD_HAVE_REQUESTED, r->requested_bytes);
    if (r->dtype[0])
        printf("  %-28s %s, shape x dtype size, %s\n", "  tensor dtype", r->dtype,
               r->dtype_from_op ? "the dtype from the op's T attribute" : "exact");
    const char *note = od_cli_request_note(r);
    if (note)
        printf("  %-28s %s\n", "", note);
    row("device capacity", r->have & OD_HAVE_CAPACITY, r->capacity_bytes);
    row("device free", r->have & OD_HAVE_FREE, r->free_bytes);
    row("per-process cap (allowed)", r->have & OD_HAVE_ALLOWED, r->allowed_bytes);
    row("allocated by the framework", r->have & OD_HAVE_ALLOCATED, r->allocated_bytes);
    row("reserved but unallocated", r->have & OD_HAVE_RESERVED_UNALLOC, r->reserved_unallocated_bytes);
    row(r->framework == OD_FW_HOST ? "process RSS" : r->self_from_other ? "this process (as Process N)" : "this process in total",
        r->have & OD_HAVE_PROCESS, r->process_bytes);
    row("compiled program, in all", r->program_bytes != 0, r->program_bytes);
    if (r->kind == OD_KIND_VLLM_KV_LEN && r->max_model_len)
        printf("  %-28s %llu tokens, KV cache %llu tokens\n", "max_model_len",
               (unsigned long long)r->max_model_len, (unsigned long long)r->kv_cache_tokens);
    for (size_t k = 0; k < r->n_other; k++) {
        char label[48];
        snprintf(label, sizeof label, "other process %llu", (unsigned long long)r->other[k].pid);
        row(label, 1, r->other[k].bytes);
    }
    if (r->rounded)
        printf("  (figures as printed, rounded to two decimals)\n");
    if (r->have_torch_range) {
        char span[80];
        printf("  %-28s %s, by the message's wording\n", "torch",
               od_torch_range_format(&r->torch_range, span, sizeof span));
    }
    const char *col = r->verdict == OD_OOM_UNKNOWN ? od_c_yellow : od_c_red;
    printf("  verdict: %s%s%s\n", col, od_oom_verdict_name(r->verdict), od_c_reset);
    od_cli_oom_reason(r, reason, sizeof reason);
    printf("    %s\n", reason);
    const char *meaning = od_advice_meaning(r);
    if (meaning)
        printf("  means: %s\n", meaning);
    if (r->verdict == OD_OOM_CAPACITY && r->have_headroom && !r->near_full && r->kind == OD_KIND_ALLOCATOR && r->n_other == 0 && (r->have & OD_HAVE_CAPACITY) &&
        (r->have & OD_HAVE_FREE) && (r->have & OD_HAVE_ALLOCATED) && !(r->have & OD_HAVE_ALLOWED)) {
        uint64_t used = r->allocated_bytes + r->reserved_unallocated_bytes + r->free_bytes;
        if (r->capacity_bytes > used)
            printf("    (%s of the device is outside PyTorch's pool: CUDA context, libraries, or processes "
                   "the message does not list)\n",
                   od_format_iec(r->capacity_bytes - used, b, sizeof b));
    }
    od_hint h[8];
    size_t nh = od_advice_hints(r, h, 8);
    for (size_t k = 0; k < nh; k++) {
        const od_advice_text *t = od_advice_get(h[k].id);
        printf("  %s %s%s (%s)\n", k == 0 ? "try:" : "    ", h[k].alternative ? "or " : "", h[k].action, t->effect);
        /* a command shown under an earlier remedy of this list is not repeated */
        int shown = 0;
        for (size_t j = 0; h[k].command && j < k && !shown; j++)
            shown = h[j].command && strcmp(h[j].command, h[k].command) == 0;
        if (h[k].command && !shown)
            printf("       $ %s\n", h[k].command);
    }
}

static void print_summary(const od_mem_summary *m)
{
    char a[32], b[32];
    printf("%smemory_summary%s of device %d (line %llu; figures truncated to the unit shown)\n", od_c_bold,
           od_c_reset, m->device, (unsigned long long)m->line);
    printf("  %-28s %s (peak %s)\n", "allocated", od_format_iec(m->allocated_bytes, a, sizeof a),
           od_format_iec(m->allocated_peak_bytes, b, sizeof b));
    printf("  %-28s %s (peak %s)\n", "reserved", od_format_iec(m->reserved_bytes, a, sizeof a),
           od_format_iec(m->reserved_peak_bytes, b, sizeof b));
    uint64_t ru = m->reserved_bytes > m->allocated_bytes ? m->reserved_bytes - m->allocated_bytes : 0;
    printf("  %-28s %s\n", "reserved but unallocated", od_format_iec(ru, a, sizeof a));
    if (m->have_non_releasable)
        printf("  %-28s %s\n", "non-releasable (stranded)", od_format_iec(m->non_releasable_bytes, a, sizeof a));
    else
        printf("  %-28s not in the table\n", "non-releasable (stranded)");
    if (m->have_counts)
        printf("  %-28s %llu OOMs, %llu cudaMalloc retries\n", "events", (unsigned long long)m->ooms,
               (unsigned long long)m->retries);
    if (m->verdict != OD_OOM_UNKNOWN)
        printf("  verdict: %s (non-releasable memory is most of what is reserved but unallocated, and OOMs "
               "were counted)\n",
               od_oom_verdict_name(m->verdict));
}

static void print_stats(const od_mem_stats *m)
{
    char a[32];
    printf("%smemory_stats%s (%s)\n", od_c_bold, od_c_reset, m->jax ? "JAX" : "PyTorch");
    if (m->have & OD_MS_ALLOCATED) printf("  %-28s %s\n", m->jax ? "bytes in use" : "allocated", od_format_iec(m->allocated_bytes, a, sizeof a));
    if (m->have & OD_MS_ALLOCATED_PEAK) printf("  %-28s %s\n", m->jax ? "peak bytes in use" : "peak allocated", od_format_iec(m->allocated_peak_bytes, a, sizeof a));
    if (m->have & OD_MS_RESERVED) printf("  %-28s %s\n", m->jax ? "pool" : "reserved", od_format_iec(m->reserved_bytes, a, sizeof a));
    if (m->have & OD_MS_RESERVED_PEAK) printf("  %-28s %s\n", m->jax ? "peak pool" : "peak reserved", od_format_iec(m->reserved_peak_bytes, a, sizeof a));
    if ((m->have & OD_MS_RESERVED) && (m->have & OD_MS_ALLOCATED) && m->reserved_bytes >= m->allocated_bytes)
        printf("  %-28s %s\n", "reserved but unallocated", od_format_iec(m->reserved_bytes - m->allocated_bytes, a, sizeof a));
    if (m->have & OD_MS_INACTIVE) printf("  %-28s %s\n", "inactive split (stranded)", od_format_iec(m->inactive_split_bytes, a, sizeof a));
    if (m->have & OD_MS_LIMIT) printf("  %-28s %s\n", "limit", od_format_iec(m->limit_bytes, a, sizeof a));
    if (m->have & OD_MS_LARGEST_FREE) printf("  %-28s %s\n", "largest free block", od_format_iec(m->largest_free_block_bytes, a, sizeof a));
    if (m->have & OD_MS_OOMS) printf("  %-28s %llu\n", "OOMs", (unsigned long long)m->ooms);
    if (m->have & OD_MS_RETRIES) printf("  %-28s %llu\n", "allocation retries", (unsigned long long)m->retries);
    if (m->cut_short)
        printf("  the dict stops before its end (a paste cut short): the figures after its last whole "
               "entry are missing\n");
    if (m->verdict != OD_OOM_UNKNOWN)
        printf("  verdict: %s (inactive split memory is most of what is reserved but unallocated, and OOMs "
               "were counted)\n",
               od_oom_verdict_name(m->verdict));
}

static void print_smi(const od_triage *t)
{
    char a[32], b[32], c[32];
    printf("%snvidia-smi%s (%s)\n", od_c_bold, od_c_reset, t->smi_format ? t->smi_format : "?");
    for (size_t i = 0; i < t->n_gpus; i++) {
        const od_smi_gpu *g = &t->gpus[i];
        printf("  GPU %d%s%s%s%s: %s used of %s", g->index, g->name[0] ? " " : "", g->name,
               g->bus_id[0] ? " " : "", g->bus_id,
               od_format_iec(g->used_bytes, a, sizeof a), od_format_iec(g->total_bytes, b, sizeof b));
        if (g->have_free)
            printf(", %s free", od_format_iec(g->free_bytes, c, sizeof c));
        if (g->have_reserved)
            printf(", %s reserved by the driver", od_format_iec(g->reserved_bytes, c, sizeof c));
        printf("\n");
    }
    for (size_t i = 0; i < t->n_procs; i++) {
        const od_smi_process *p = &t->procs[i];
        printf("  process %llu on GPU %d (%s): %s\n", (unsigned long long)p->pid, p->gpu, p->name,
               od_format_iec(p->bytes, a, sizeof a));
    }
    if (t->smi_verdict == OD_OOM_OTHER_PROCESSES)
        printf("  verdict: other_processes (more than one process holds memory on one GPU)\n");
}

int od_cmd_triage(int argc, char **argv)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int json = 0, c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'j': json = 1; break;
        case 'h': usage(); return OD_EXIT_OK;
        default: return od_cli_unknown_option("triage", "h", opts, argv);
        }
    }
    if (argc - optind > 1)
        return od_cli_usage_error("triage", "expected one FILE (or -), got %d", argc - optind);
    const char *path = optind < argc ? argv[optind] : "-";
    int rc = OD_EXIT_OK;
    od_triage *t = NULL;
    if ((rc = od_cli_triage_text(path, &t)) != 0)
        return rc;
    int found_other = t->n_summaries || t->stats || t->n_gpus || t->n_procs;
    rc = (t->n_reports || found_other) ? OD_EXIT_OK : OD_EXIT_NOTHING;
    if (json) {
        int jr = od_cli_print_json(od_triage_document(t, od_cli_input_name(path)));
        od_triage_free(t);
        return jr ? jr : rc;
    }
    od_cli_color_init();
    if (!t->n_reports)
        printf("no OOM report found\n");
    for (size_t i = 0; i < t->n_reports; i++) {
        if (i)
            printf("\n");
        print_report(&t->reports[i], i, t->n_reports);
    }
    int sep = t->n_reports > 0;
    for (size_t i = 0; i < t->n_summaries; i++, sep = 1) {
        if (sep) printf("\n");
        print_summary(&t->summaries[i]);
    }
    if (t->stats) {
        if (sep) printf("\n");
        print_stats(t->stats);
        sep = 1;
    }
    if (t->n_gpus || t->n_procs) {
        if (sep) printf("\n");
        print_smi(t);
    }
    od_triage_free(t);
    return rc;
}
