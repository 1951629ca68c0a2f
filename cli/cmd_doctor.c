/* cmd_doctor.c - `oomdoc doctor FILE... [--fail-on VERDICT,...] [--json]`: one diagnosis
 * from whatever the user has: an OOM log, a per-step memory log, an NVML series,
 * memory_summary()/memory_stats() output, nvidia-smi output.
 *
 * Each input's kind is detected from its bytes, not its name. Snapshots (pickle, or gzip
 * around a pickle) and config.json are recognized but not diagnosed here yet: see the
 * TODO(snapshot) and TODO(plan) hooks below, where the snapshot reader and the planner
 * plug in. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/trend.h"
#include "../lib/triage.h"
#include "../lib/units.h"
#include "commands.h"
#include "output.h"
#include "textin.h"

typedef enum {
    V_HEALTHY, V_UNKNOWN, V_CAPACITY, V_FRAGMENTATION, V_OTHER_PROCESSES, V_CAP_LIMIT, V_LEAK, V_COUNT
} verdict;

static const char *const verdict_names[V_COUNT] = {
    "healthy", "unknown", "capacity", "fragmentation", "other_processes", "cap_limit", "leak",
};

typedef enum { K_LOG, K_SERIES, K_SNAPSHOT, K_CONFIG, K_NOTHING } input_kind;
static const char *const kind_names[] = {"log", "series", "snapshot", "config", "unrecognized"};

typedef struct {
    const char *path;     /* as given: "-" is stdin */
    const char *name;     /* as shown */
    input_kind kind;
    od_triage *tri;       /* K_LOG */
    od_series *series;    /* K_SERIES */
    od_trend_fit fit;
    int have_fit;
} input;

static void usage(void)
{
    printf("Usage: oomdoc doctor FILE... [--fail-on VERDICT,...] [--json]\n\n"
           "One diagnosis from whatever you have after an OOM: the error log or traceback,\n"
           "a per-step memory log (CSV/JSON Lines), an NVML series (time_s,used_bytes),\n"
           "memory_summary() or memory_stats() output, nvidia-smi output. Each input's kind\n"
           "is detected from its content. Prints the verdict (capacity, fragmentation, leak,\n"
           "other_processes, cap_limit, healthy, unknown), the evidence with numbers, what to\n"
           "do now and in the long term, ranked, and the command that verifies the fix.\n"
           "A leak found in a step log outranks the OOM it causes.\n\n"
           "Options:\n"
           "  --fail-on LIST  exit 1 when the verdict is in LIST (comma-separated), for CI\n"
           "  --json          machine-readable output (schema_version 1, sizes in bytes)\n"
           "  --help          this text\n\n"
           "Example:\n"
           "  oomdoc doctor tests/data/extracted/train_oom_log.txt\n"
           "  oomdoc doctor tests/data/extracted/leak_eval_no_grad_steps.csv --fail-on leak\n\n"
           "Snapshots (.pickle) and config.json are recognized; their diagnosis is not in\n"
           "this build yet (use oomdoc snapshot / oomdoc plan).\n\n" OD_EXIT_CODES_HELP);
}

/* ---------- detection ---------- */

static int looks_like_config(const char *text, size_t len)
{
    size_t i = 0;
    while (i < len && (text[i] == ' ' || text[i] == '\n' || text[i] == '\t' || text[i] == '\r'))
        i++;
    if (i >= len || text[i] != '{')
        return 0;
    json_error_t je;
    json_t *o = json_loadb(text, len, 0, &je);
    int cfg = json_is_object(o) && (json_object_get(o, "model_type") || json_object_get(o, "architectures")) &&
              (json_object_get(o, "hidden_size") || json_object_get(o, "n_embd") || json_object_get(o, "d_model"));
    json_decref(o);
    return cfg;
}

/* Reads and classifies one input. Returns 0 or an exit code. */
static int load_input(input *in)
{
    int rc = 0;
    size_t len = 0;
    char *text = od_cli_read_all(in->path, &len, &rc);
    if (!text)
        return rc;
    od_error err;
    od_error_clear(&err);
    if (len > 0 && (unsigned char)text[0] == 0x80) {
        /* TODO(snapshot): hand the file to od_snapshot_load and the snapshot diagnosis
         * (iteration boundaries, surviving sites, categories at the peak, stranded bytes,
         * replay what-ifs) once the snapshot reader is on this branch. */
        in->kind = K_SNAPSHOT;
        free(text);
        return 0;
    }
    if (looks_like_config(text, len)) {
        /* TODO(plan): estimate from config.json and compare with a snapshot per category. */
        in->kind = K_CONFIG;
        free(text);
        return 0;
    }
    if (od_triage_parse(text, len, &in->tri, &err) != OD_OK) {
        free(text);
        return od_cli_report_error(in->path, &err);
    }
    if (in->tri->n_reports) {
        in->kind = K_LOG;
    } else {
        od_series *s = NULL;
        od_error serr;
        if (od_series_parse(text, len, &s, &serr) == OD_OK) {
            in->kind = K_SERIES;
            in->series = s;
            if (od_trend_analyze(s, od_series_primary(s), 0, &in->fit, &serr) == OD_OK)
                in->have_fit = 1;
        } else if (in->tri->n_summaries || in->tri->stats || in->tri->n_gpus || in->tri->n_procs) {
            in->kind = K_LOG;
        } else {
            in->kind = K_NOTHING;
        }
    }
    free(text);
    return 0;
}

/* ---------- the diagnosis ---------- */

typedef struct {
    char text[720];
} line;

typedef struct {
    verdict v;
    const input *from;              /* the input that decided the verdict */
    const od_oom_report *report;    /* when an OOM report decided it */
    line evidence[16];
    size_t n_evidence;
    line now[6], now_effect[6], later[6], later_effect[6];
    size_t n_now, n_later;
    char verify[400];
    int have_growth;
    double growth_per_step;
} diagnosis;

#define ADD(arr, n, ...) do { if ((n) < sizeof(arr) / sizeof(arr[0])) snprintf((arr)[(n)++].text, sizeof(arr[0].text), __VA_ARGS__); } while (0)

static void now(diagnosis *d, const char *action, const char *effect)
{
    if (d->n_now < 6) {
        snprintf(d->now[d->n_now].text, sizeof d->now[0].text, "%s", action);
        snprintf(d->now_effect[d->n_now++].text, sizeof d->now_effect[0].text, "%s", effect);
    }
}

static void later(diagnosis *d, const char *action, const char *effect)
{
    if (d->n_later < 6) {
        snprintf(d->later[d->n_later].text, sizeof d->later[0].text, "%s", action);
        snprintf(d->later_effect[d->n_later++].text, sizeof d->later_effect[0].text, "%s", effect);
    }
}

static verdict from_oom(od_oom_verdict v)
{
    switch (v) {
    case OD_OOM_FRAGMENTATION: return V_FRAGMENTATION;
    case OD_OOM_CAP_LIMIT: return V_CAP_LIMIT;
    case OD_OOM_OTHER_PROCESSES: return V_OTHER_PROCESSES;
    case OD_OOM_CAPACITY: return V_CAPACITY;
    case OD_OOM_UNKNOWN: return V_UNKNOWN;
    }
    return V_UNKNOWN;
}

static void evidence_from_log(diagnosis *d, const input *in)
{
    char a[32], b[32], reason[512];
    const od_triage *t = in->tri;
    if (t->n_reports) {
        const od_oom_report *r = &t->reports[t->n_reports - 1];
        od_cli_oom_reason(r, reason, sizeof reason);
        ADD(d->evidence, d->n_evidence, "%s: %s OOM (line %llu): %s", in->name, od_framework_name(r->framework),
            (unsigned long long)r->line, reason);
        if (t->n_reports > 1)
            ADD(d->evidence, d->n_evidence, "%s: %zu OOM reports; the last one is used", in->name, t->n_reports);
        const char *note = od_cli_request_note(r);
        if (note && r->verdict != OD_OOM_UNKNOWN)
            ADD(d->evidence, d->n_evidence, "requested %s: %s", od_format_iec(r->requested_bytes, a, sizeof a), note);
    }
    for (size_t i = 0; i < t->n_summaries; i++) {
        const od_mem_summary *m = &t->summaries[i];
        uint64_t ru = m->reserved_bytes > m->allocated_bytes ? m->reserved_bytes - m->allocated_bytes : 0;
        ADD(d->evidence, d->n_evidence,
            "%s: memory_summary: %s allocated, %s reserved (%s unallocated, %s non-releasable), %llu OOMs",
            in->name, od_format_iec(m->allocated_bytes, a, sizeof a), od_format_iec(m->reserved_bytes, b, sizeof b),
            od_format_iec(ru, reason, 32), od_format_iec(m->non_releasable_bytes, reason + 32, 32),
            (unsigned long long)m->ooms);
    }
    if (t->stats && !t->stats->jax && (t->stats->have & OD_MS_RESERVED) && (t->stats->have & OD_MS_ALLOCATED))
        ADD(d->evidence, d->n_evidence, "%s: memory_stats: %s allocated (peak %s), %s reserved, %llu OOMs",
            in->name, od_format_iec(t->stats->allocated_bytes, a, sizeof a),
            od_format_iec(t->stats->allocated_peak_bytes, b, sizeof b),
            od_format_iec(t->stats->reserved_bytes, reason, 32), (unsigned long long)t->stats->ooms);
    for (size_t i = 0; i < t->n_procs; i++)
        ADD(d->evidence, d->n_evidence, "%s: nvidia-smi: process %llu (%s) holds %s on GPU %d", in->name,
            (unsigned long long)t->procs[i].pid, t->procs[i].name, od_format_iec(t->procs[i].bytes, a, sizeof a),
            t->procs[i].gpu);
    for (size_t i = 0; i < t->n_gpus; i++)
        ADD(d->evidence, d->n_evidence, "%s: nvidia-smi: GPU %d: %s used of %s", in->name, t->gpus[i].index,
            od_format_iec(t->gpus[i].used_bytes, a, sizeof a), od_format_iec(t->gpus[i].total_bytes, b, sizeof b));
}

static void evidence_from_series(diagnosis *d, const input *in)
{
    char a[32], b[32], c[32];
    const od_trend_fit *f = &in->fit;
    const char *unit = in->series->time_indexed ? "second" : "step";
    od_format_iec((uint64_t)llround(fabs(f->growth_per_x) < 9e18 ? fabs(f->growth_per_x) : 9e18), a, sizeof a);
    ADD(d->evidence, d->n_evidence, "%s: %s %s: %s%s per %s (Theil-Sen, r2 %.4f) over %zu %s after %zu of %s",
        in->name, od_metric_name(f->metric), od_trend_verdict_name(f->verdict), f->growth_per_x < 0 ? "-" : "", a,
        unit, f->r2, f->n_points - f->warmup_points, in->series->time_indexed ? "samples" : "steps",
        f->warmup_points, in->series->time_indexed ? "idle start and warm-up" : "warm-up");
    ADD(d->evidence, d->n_evidence, "%s: %s went from %s to %s", in->name, od_metric_name(f->metric),
        od_format_iec((uint64_t)llround(f->first_bytes), b, sizeof b),
        od_format_iec((uint64_t)llround(f->last_bytes), c, sizeof c));
}

/* Ranked actions, each with its expected effect, and how to check the fix. */
static void prescribe(diagnosis *d)
{
    char a[32], b[32], buf[400];
    const od_oom_report *r = d->report;
    const char *path = d->from ? d->from->name : "LOG";
    int rocm = r && r->framework == OD_FW_PYTORCH_ROCM;
    const char *conf = rocm ? "PYTORCH_HIP_ALLOC_CONF" : "PYTORCH_CUDA_ALLOC_CONF";
    switch (d->v) {
    case V_LEAK: {
        od_format_iec((uint64_t)llround(d->growth_per_step > 0 ? d->growth_per_step : 0), a, sizeof a);
        snprintf(buf, sizeof buf, "growth of %s per %s stops; memory stays flat after step 1", a,
                 d->from && d->from->series && d->from->series->time_indexed ? "second" : "step");
        now(d, "keep Python numbers, not tensors, across steps: loss.item() instead of appending the loss tensor",
            buf);
        now(d, "wrap evaluation in torch.no_grad() (or torch.inference_mode())",
            "no autograd graph is kept alive by eval outputs");
        now(d, "detach() or .cpu() anything stored for logging or metrics", "stored values no longer pin GPU memory");
        later(d, "record a memory snapshot over a few steps (torch.cuda.memory._record_memory_history) and run oomdoc doctor on it",
              "names the code site whose allocations survive each step");
        later(d, "log torch.cuda.memory_allocated() per step and fail CI on oomdoc trend --json verdict leak",
              "leaks are caught before they reach production runs");
        snprintf(d->verify, sizeof d->verify, "oomdoc trend %s   (expect verdict stable after the fix)", path);
        return;
    }
    case V_FRAGMENTATION:
        snprintf(buf, sizeof buf, "set %s=expandable_segments:True", conf);
        if (r) {
            char effect[400], c[32];
            snprintf(effect, sizeof effect,
                     "segments grow instead of stranding free blocks: the %s request fits in the %s "
                     "(%s reserved but unallocated + headroom) that existed",
                     od_format_iec(r->requested_bytes, a, sizeof a), od_format_iec(r->available_bytes, b, sizeof b),
                     od_format_iec(r->reserved_unallocated_bytes, c, sizeof c));
            now(d, buf, effect);
        } else {
            now(d, buf, "free blocks are no longer stranded in fixed-size segments");
        }
        snprintf(buf, sizeof buf, "or %s=max_split_size_mb:128,garbage_collection_threshold:0.8", conf);
        now(d, buf, "large cached blocks are not split for small requests and are reclaimed earlier");
        now(d, "call torch.cuda.empty_cache() between phases (e.g. after evaluation), never per step",
            "cached blocks of the finished phase return to the device");
        later(d, "allocate long-lived tensors first and keep shapes fixed (pad to a few bucket sizes)",
              "freed blocks fit the next requests exactly");
        later(d, "use CUDA graphs or a static memory plan for the steady state", "no allocation churn at all");
        snprintf(d->verify, sizeof d->verify, "%s=expandable_segments:True python train.py; then oomdoc triage %s",
                 conf, path);
        return;
    case V_CAP_LIMIT:
        if (r && r->framework == OD_FW_PYTORCH_MPS) {
            now(d, "raise PYTORCH_MPS_HIGH_WATERMARK_RATIO (e.g. 1.7; 0.0 removes the cap)",
                "the pool may grow past the watermark that stopped it");
            snprintf(d->verify, sizeof d->verify, "PYTORCH_MPS_HIGH_WATERMARK_RATIO=1.7 python train.py");
        } else {
            if (r && (r->have & OD_HAVE_CAPACITY) && r->capacity_bytes) {
                double need = (double)(r->allocated_bytes + r->reserved_unallocated_bytes + r->requested_bytes) /
                              (double)r->capacity_bytes;
                snprintf(buf, sizeof buf, "raise torch.cuda.set_per_process_memory_fraction(...) to at least %.3f",
                         ceil(need * 1000) / 1000);
                snprintf(d->verify, sizeof d->verify, "the %s request fits under the cap (the device had %s free)",
                         od_format_iec(r->requested_bytes, a, sizeof a), od_format_iec(r->free_bytes, b, sizeof b));
                now(d, buf, d->verify);
            } else {
                now(d, "raise or remove torch.cuda.set_per_process_memory_fraction(...)", "the request fits under the cap");
            }
            snprintf(d->verify, sizeof d->verify, "rerun with the larger fraction; then oomdoc triage %s (expect no OOM report)", path);
        }
        now(d, "or shrink the step to fit the cap: smaller batch, activation checkpointing", "peak memory drops below the cap");
        later(d, "size the cap from a plan of the workload (oomdoc plan config.json)", "the cap matches what the job needs");
        return;
    case V_OTHER_PROCESSES: {
        char pids[200] = "";
        size_t o = 0;
        for (size_t i = 0; r && i < r->n_other && o < sizeof pids - 24; i++)
            o += (size_t)snprintf(pids + o, sizeof pids - o, "%s%llu (%s)", i ? ", " : "",
                                  (unsigned long long)r->other[i].pid, od_format_iec(r->other[i].bytes, a, sizeof a));
        snprintf(buf, sizeof buf, "stop or move the other processes on this GPU%s%s", o ? ": " : "", pids);
        if (r)
            snprintf(d->verify, sizeof d->verify, "frees %s; %s were missing",
                     od_format_iec(r->others_bytes, a, sizeof a), od_format_iec(r->missing_bytes, b, sizeof b));
        now(d, buf, r ? d->verify : "their memory becomes available");
        now(d, "or run on an idle GPU (CUDA_VISIBLE_DEVICES=N)", "the whole device is available");
        later(d, "make GPUs exclusive to one job (nvidia-smi -c EXCLUSIVE_PROCESS, or the scheduler's GPU isolation)",
              "no other process can take memory from a running job");
        later(d, "partition large GPUs with MIG where jobs must share", "each job gets a fixed, isolated slice");
        snprintf(d->verify, sizeof d->verify, "nvidia-smi | oomdoc triage   (expect no other processes listed)");
        return;
    }
    case V_CAPACITY:
        now(d, "halve the batch size and use gradient accumulation to keep the effective batch",
            "activation memory roughly halves");
        now(d, "enable activation checkpointing (model.gradient_checkpointing_enable() in transformers)",
            "activations shrink to about one layer's worth at a time, at ~30% more compute");
        now(d, "train under bf16 autocast, or use a fused or 8-bit optimizer", "activations and optimizer state shrink");
        later(d, "shard parameters, gradients and optimizer state (FSDP / ZeRO) across GPUs",
              "per-GPU model state divides by the number of GPUs");
        later(d, "estimate what fits before launching: oomdoc plan config.json", "batch size chosen from the estimate, not by trial");
        snprintf(d->verify, sizeof d->verify, "oomdoc plan config.json --batch-size N   (then rerun and oomdoc triage %s)", path);
        return;
    case V_UNKNOWN:
        now(d, "capture a memory snapshot at the OOM: torch.cuda.memory._record_memory_history(max_entries=100000), "
               "then torch.cuda.memory._dump_snapshot(\"oom.pickle\") in the except block",
            "oomdoc doctor oom.pickle can tell capacity, fragmentation and leaks apart");
        now(d, "print torch.cuda.memory_summary() when the OOM is caught", "gives the pool figures the message lacks");
        if (r && r->framework == OD_FW_JAX)
            now(d, "JAX preallocates 75% of the GPU: try XLA_PYTHON_CLIENT_MEM_FRACTION=.95 or XLA_PYTHON_CLIENT_PREALLOCATE=false",
                "more of the device is available to the pool, or memory is taken on demand");
        if (r && r->framework == OD_FW_TENSORFLOW)
            now(d, "tf.config.experimental.set_memory_growth(gpu, True); TF_GPU_ALLOCATOR=cuda_malloc_async",
                "TF stops reserving the whole GPU and fragments less");
        snprintf(d->verify, sizeof d->verify, "oomdoc doctor oom.pickle");
        return;
    case V_HEALTHY:
    case V_COUNT:
        snprintf(d->verify, sizeof d->verify, "nothing to fix");
        return;
    }
}

static void diagnose(diagnosis *d, const input *ins, size_t n)
{
    memset(d, 0, sizeof *d);
    d->v = V_UNKNOWN;
    int decided = 0, any_data = 0;
    /* A leak outranks the OOM it ends in; then the most recent OOM report. */
    for (size_t i = 0; i < n; i++)
        if (ins[i].kind == K_SERIES && ins[i].have_fit && ins[i].fit.verdict == OD_TREND_LEAK) {
            d->v = V_LEAK;
            d->from = &ins[i];
            d->have_growth = !ins[i].series->time_indexed;
            d->growth_per_step = ins[i].fit.growth_per_x;
            decided = 1;
            break;
        }
    for (size_t i = n; !decided && i-- > 0;)
        if (ins[i].kind == K_LOG && ins[i].tri->n_reports) {
            d->report = &ins[i].tri->reports[ins[i].tri->n_reports - 1];
            d->v = from_oom(d->report->verdict);
            d->from = &ins[i];
            decided = 1;
        }
    for (size_t i = 0; i < n; i++) {
        if (ins[i].kind == K_LOG) {
            evidence_from_log(d, &ins[i]);
            any_data = 1;
        } else if (ins[i].kind == K_SERIES && ins[i].have_fit) {
            evidence_from_series(d, &ins[i]);
            any_data = 1;
        } else if (ins[i].kind == K_SERIES) {
            ADD(d->evidence, d->n_evidence, "%s: a memory series too short for a trend", ins[i].name);
        } else if (ins[i].kind == K_SNAPSHOT) {
            ADD(d->evidence, d->n_evidence, "%s: a memory snapshot: not diagnosed by this build yet (oomdoc snapshot %s)",
                ins[i].name, ins[i].name);
        } else if (ins[i].kind == K_CONFIG) {
            ADD(d->evidence, d->n_evidence, "%s: a model config.json: estimate with oomdoc plan %s", ins[i].name, ins[i].name);
        } else {
            ADD(d->evidence, d->n_evidence, "%s: no OOM report, memory log or GPU listing recognized", ins[i].name);
        }
    }
    if (!decided && any_data) {
        /* No OOM and no leak: healthy when the data shows no OOM either. */
        int ooms = 0;
        for (size_t i = 0; i < n; i++) {
            if (ins[i].kind == K_LOG) {
                for (size_t k = 0; k < ins[i].tri->n_summaries; k++)
                    ooms += ins[i].tri->summaries[k].ooms > 0;
                if (ins[i].tri->stats && (ins[i].tri->stats->have & OD_MS_OOMS))
                    ooms += ins[i].tri->stats->ooms > 0;
            }
        }
        d->v = ooms ? V_UNKNOWN : V_HEALTHY;
        if (ooms)
            ADD(d->evidence, d->n_evidence, "the allocator counted OOMs, but no OOM message was given");
    }
    const input *snap = NULL;
    for (size_t i = 0; i < n && !snap; i++)
        if (ins[i].kind == K_SNAPSHOT)
            snap = &ins[i];
    if (!decided && !any_data && snap) {
        /* TODO(snapshot): the snapshot diagnosis decides the verdict here. */
        snprintf(d->verify, sizeof d->verify, "oomdoc snapshot %s", snap->name);
        return;
    }
    prescribe(d);
}

/* ---------- output ---------- */

static json_t *doc_json(const diagnosis *d, const input *ins, size_t n)
{
    json_t *doc = json_object();
    json_object_set_new(doc, "schema_version", json_integer(1));
    json_object_set_new(doc, "verdict", json_string(verdict_names[d->v]));
    json_object_set_new(doc, "growth_bytes_per_step",
                        d->v == V_LEAK && d->have_growth ? json_integer((json_int_t)llround(d->growth_per_step)) : json_null());
    if (d->v == V_LEAK && d->from && d->from->series && d->from->series->time_indexed)
        json_object_set_new(doc, "growth_bytes_per_second", json_integer((json_int_t)llround(d->growth_per_step)));
    /* TODO(snapshot): the site (file:line:function) that keeps memory alive, from a snapshot. */
    json_object_set_new(doc, "site", json_null());
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
        json_t *o = json_object();
        json_object_set_new(o, "file", json_string(ins[i].name));
        json_object_set_new(o, "kind", json_string(kind_names[ins[i].kind]));
        json_array_append_new(arr, o);
    }
    json_object_set_new(doc, "inputs", arr);
    arr = json_array();
    for (size_t i = 0; i < d->n_evidence; i++)
        json_array_append_new(arr, json_string(d->evidence[i].text));
    json_object_set_new(doc, "evidence", arr);
    json_t *nw = json_array(), *lt = json_array();
    for (size_t i = 0; i < d->n_now; i++)
        json_array_append_new(nw, json_pack("{s:i,s:s,s:s}", "rank", (int)i + 1, "action", d->now[i].text, "effect",
                                            d->now_effect[i].text));
    for (size_t i = 0; i < d->n_later; i++)
        json_array_append_new(lt, json_pack("{s:i,s:s,s:s}", "rank", (int)i + 1, "action", d->later[i].text, "effect",
                                            d->later_effect[i].text));
    json_object_set_new(doc, "do_now", nw);
    json_object_set_new(doc, "long_term", lt);
    json_object_set_new(doc, "verify", json_string(d->verify));
    json_object_set_new(doc, "oom_report", d->report ? od_cli_oom_json(d->report) : json_null());
    return doc;
}

static void print_text(const diagnosis *d)
{
    const char *col = d->v == V_HEALTHY ? od_c_green : d->v == V_UNKNOWN ? od_c_yellow : od_c_red;
    printf("%sverdict: %s%s%s\n", od_c_bold, col, verdict_names[d->v], od_c_reset);
    if (d->n_evidence) {
        printf("\n%sevidence%s\n", od_c_bold, od_c_reset);
        for (size_t i = 0; i < d->n_evidence; i++)
            printf("  - %s\n", d->evidence[i].text);
    }
    if (d->n_now) {
        printf("\n%sdo now%s\n", od_c_bold, od_c_reset);
        for (size_t i = 0; i < d->n_now; i++)
            printf("  %zu. %s\n     -> %s\n", i + 1, d->now[i].text, d->now_effect[i].text);
    }
    if (d->n_later) {
        printf("\n%slong term%s\n", od_c_bold, od_c_reset);
        for (size_t i = 0; i < d->n_later; i++)
            printf("  %zu. %s\n     -> %s\n", i + 1, d->later[i].text, d->later_effect[i].text);
    }
    printf("\n%sverify%s\n  %s\n", od_c_bold, od_c_reset, d->verify);
}

static int parse_fail_on(const char *list, int *fail_on)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int found = 0;
        for (int v = 0; v < V_COUNT; v++)
            if (strcmp(tok, verdict_names[v]) == 0)
                fail_on[v] = found = 1;
        if (!found)
            return od_cli_usage_error("doctor",
                                      "--fail-on: '%s' is not a verdict (capacity, fragmentation, leak, "
                                      "other_processes, cap_limit, healthy, unknown)", tok);
    }
    return 0;
}

int od_cmd_doctor(int argc, char **argv)
{
    static const struct option opts[] = {
        {"fail-on", required_argument, NULL, 'f'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int json = 0, c, fail_on[V_COUNT] = {0};
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'f':
            if (parse_fail_on(optarg, fail_on))
                return OD_EXIT_USAGE;
            break;
        case 'j': json = 1; break;
        case 'h': usage(); return OD_EXIT_OK;
        case ':': return od_cli_usage_error("doctor", "option '%s' needs a value", argv[optind - 1]);
        default: return od_cli_usage_error("doctor", "unknown option '%s'", argv[optind - 1]);
        }
    }
    size_t n = (size_t)(argc - optind);
    if (n == 0)
        return od_cli_usage_error("doctor", "expected at least one FILE");
    input *ins = calloc(n, sizeof *ins);
    if (!ins)
        return OD_EXIT_INTERNAL;
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        ins[i].path = argv[optind + (int)i];
        ins[i].name = strcmp(ins[i].path, "-") == 0 ? "<stdin>" : ins[i].path;
        rc = load_input(&ins[i]);
    }
    if (!rc) {
        int all_nothing = 1;
        for (size_t i = 0; i < n; i++)
            all_nothing &= ins[i].kind == K_NOTHING;
        diagnosis *d = malloc(sizeof *d);
        if (!d) {
            rc = OD_EXIT_INTERNAL;
        } else {
            diagnose(d, ins, n);
            if (json) {
                rc = od_cli_print_json(doc_json(d, ins, n));
            } else {
                od_cli_color_init();
                print_text(d);
            }
            if (!rc && (fail_on[d->v] || all_nothing))
                rc = OD_EXIT_NOTHING;
            free(d);
        }
    }
    for (size_t i = 0; i < n; i++) {
        od_triage_free(ins[i].tri);
        od_series_free(ins[i].series);
    }
    free(ins);
    return rc;
}
