/* cmd_doctor.c - `oomdoc doctor FILE... [--fail-on VERDICT,...] [--json]`: one diagnosis
 * from whatever the user has: an OOM log, a per-step memory log, an NVML series,
 * memory_summary()/memory_stats() output, nvidia-smi output, memory snapshots.
 *
 * Each input's kind is detected from its bytes, not its name; the diagnosis itself is
 * lib/diagnose (shared with `oomdoc report`). With --config (or a config.json input) and
 * the plan flags, the plan's estimate is compared with each snapshot per category. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/diagnose.h"
#include "base/torchver.h"
#include "base/units.h"
#include "commands.h"
#include "model/estimate.h"
#include "model/sites.h"
#include "output.h"
#include "planflags.h"
#include "profin.h"
#include "read/hfconfig.h"
#include "read/inputkind.h"
#include "read/profile.h"
#include "read/trend.h"
#include "read/triage/triage.h"
#include "snapin.h"
#include "textin.h"

typedef struct {
    const char *path;     /* as given: "-" is stdin */
    const char *name;     /* as shown */
    od_input_kind kind;
    od_triage *tri;       /* OD_INPUT_LOG */
    od_snapshot *snap;    /* OD_INPUT_SNAPSHOT */
    od_model model;       /* OD_INPUT_CONFIG */
    int have_model;
    od_estimate estimate; /* OD_INPUT_CONFIG, when a snapshot is there to compare with */
    int have_estimate;
    od_series *series;    /* OD_INPUT_SERIES */
    od_trend_fit fit;
    int have_fit;
    od_profile *profile;  /* OD_INPUT_PROFILE, or a BFC allocator log (OD_INPUT_LOG) */
} input;

static void usage(void)
{
    printf("Usage: oomdoc doctor FILE... [--config config.json [plan flags]] [--fail-on VERDICT,...] [--json]\n\n"
           "One diagnosis from whatever you have after an OOM: the error log or traceback,\n"
           "a per-step memory log (CSV/JSON Lines), an NVML series (time_s,used_bytes),\n"
           "memory_summary() or memory_stats() output, nvidia-smi output, profiler records\n"
           "(PyTorch traces, memory timelines, key_averages tables; JAX memory profiles and\n"
           "memory_stats; BFC allocator logs: see oomdoc profile). Each input's kind\n"
           "is detected from its content. Prints the verdict (capacity, fragmentation, leak,\n"
           "other_processes, cap_limit, healthy, unknown), the evidence with numbers, what to\n"
           "do now and in the long term, ranked, and the command that verifies the fix.\n"
           "A memory snapshot (.pickle, .pickle.gz) is read for its iterations (live memory per\n"
           "iteration, the sites whose allocations survive them), its live memory at the peak\n"
           "by purpose, and its OOM (stranded bytes, largest free block); several snapshots\n"
           "(one per rank) are compared. A leak outranks the OOM it causes.\n\n"
           "Options:\n"
           "  --fail-on LIST  exit 1 when the verdict is in LIST (comma-separated), for CI\n"
           "  --config FILE   the model's config.json: the plan is compared with snapshots and\n"
           "                  sizes the advice (full-step cap, largest batch, recipe changes)\n"
           "  --capacity SIZE the run's per-process cap (as oomdoc replay takes it)\n"
           "  --fraction F    the cap as set_per_process_memory_fraction(F) (needs the device)\n"
           "  --gpu NAME      the device (its memory, from oomdoc plan's table)\n"
           "  --device-total SIZE  the device's memory as torch reports it\n"
           "  --torch-version V  the job's torch (else inferred from the OOM message's wording\n"
           "                  or the snapshot's layout): no advice names what it lacks\n"
           "  --batch N       plan: micro-batch per GPU (default 1)\n"
           "  --seq N         plan: sequence length (default 1024)\n"
           "  --precision P   plan: fp32, amp-bf16 (default), amp-fp16, bf16\n"
           "  --optimizer O   plan: adamw (default), adamw-fused, sgd, sgd-nomom, adafactor, adam8bit\n"
           "  --attention A   plan: sdpa (default), eager, flash\n"
           "  --checkpointing C  plan: none (default), full, selective\n"
           "  --json          machine-readable output (schema_version 1, sizes in bytes)\n"
           "  --help          this text\n\n"
           "Example:\n"
           "  oomdoc doctor tests/data/extracted/train_oom_log.txt\n"
           "  oomdoc doctor tests/data/extracted/leak_eval_no_grad_steps.csv --fail-on leak\n"
           "  oomdoc doctor tests/data/snapshots/leak_eval_no_grad.pickle --json\n\n"
           "With a snapshot and a model's config.json (an input, or --config) the plan of the\n"
           "workload (flags as for oomdoc plan, training) is compared with the snapshot's peak\n"
           "per category, naming the category that exceeds its expectation the most:\n"
           "  oomdoc doctor tests/data/snapshots/snap_train_default.pickle \\\n"
           "    --config tests/data/extracted/snap_train_default_config.json --batch 8 --seq 512\n\n"
           OD_EXIT_CODES_HELP);
}

/* ---------- detection ---------- */

/* The kind diagnose reads a file of kind k as (lib/inputkind decides k). */
static od_input_kind diag_kind(od_file_kind k)
{
    switch (k) {
    case OD_FILE_SNAPSHOT:
    case OD_FILE_SNAPSHOT_GZIP: return OD_INPUT_SNAPSHOT;
    case OD_FILE_CONFIG: return OD_INPUT_CONFIG;
    case OD_FILE_SERIES: return OD_INPUT_SERIES;
    case OD_FILE_BFC_LOG:
    case OD_FILE_LOG: return OD_INPUT_LOG;
    case OD_FILE_NOTHING:
    case OD_FILE_UNDECIDED: return OD_INPUT_NOTHING;
    default: return OD_INPUT_PROFILE;
    }
}

/* Load a profiler record from a file (streamed) or from text already read. */
static int load_profile(input *in, const char *text, size_t len)
{
    int rc = 0;
    in->profile = od_cli_load_profile(in->path, text, len, &rc);
    return in->profile ? 0 : rc;
}

/* Reads and classifies one input. Returns 0 or an exit code. */
static int load_input(input *in)
{
    int rc = 0;
    od_error err;
    od_error_clear(&err);
    od_cli_text *t = od_cli_text_open(in->path, &rc);
    if (!t)
        return rc;
    /* The first bytes tell a snapshot and a profiler record. A snapshot (traces can be
     * hundreds of MB) is streamed, from a pipe too; a profiler record from the file, read
     * here only from a pipe. BFC allocator logs are OOM logs first (triage below), their
     * figures read as a profile too. */
    od_file_kind k = od_cli_text_kind(t);
    if (od_file_kind_snapshot(k)) {
        in->kind = OD_INPUT_SNAPSHOT;
        in->snap = od_cli_text_load_snapshot(t, &rc);
        od_cli_text_close(t);
        return in->snap ? 0 : rc;
    }
    if (od_file_kind_profile(k) >= 0 && (k != OD_FILE_BFC_LOG || !od_cli_text_reopenable(t))) {
        char *text = NULL;
        size_t len = 0;
        if (!od_cli_text_reopenable(t) && !(text = od_cli_text_slurp(t, &len, &rc))) {
            od_cli_text_close(t);
            return rc;
        }
        od_cli_text_close(t);
        in->kind = diag_kind(k);
        if (k != OD_FILE_BFC_LOG) {
            rc = load_profile(in, text, len);
        } else if ((rc = load_profile(in, text, len)) == 0) {
            /* a BFC log from a pipe, read whole: triage it from memory */
            if (od_triage_parse(text, len, &in->tri, &err) != OD_OK)
                rc = od_cli_report_error(in->path, &err);
            else if (!in->tri->n_reports)
                in->kind = OD_INPUT_PROFILE;
        } else {
            rc = OD_EXIT_INPUT;
        }
        free(text);
        return rc;
    }
    /* Text: a config, a series, a log, read once into the series parser and triage both. */
    od_cli_textin r;
    rc = od_cli_text_read(t, k, &r);
    od_cli_text_close(t);
    if (rc)
        return rc;
    in->kind = diag_kind(r.kind);
    switch (in->kind) {
    case OD_INPUT_CONFIG:
        /* A config plan cannot read (an unknown model_type) is still a config: listed only. */
        in->have_model = od_hfconfig_parse(r.text, r.len, &in->model, &err) == OD_OK;
        break;
    case OD_INPUT_SERIES:
        in->series = r.series;
        r.series = NULL;
        if (od_trend_analyze(in->series, od_series_primary(in->series), 0, &in->fit, &err) == OD_OK)
            in->have_fit = 1;
        break;
    case OD_INPUT_LOG:
        in->tri = r.triage;
        r.triage = NULL;
        if (r.kind == OD_FILE_BFC_LOG && load_profile(in, NULL, 0) != 0)
            rc = OD_EXIT_INPUT;
        /* a BFC log without an OOM report is read for its figures alone, as report does */
        else if (r.kind == OD_FILE_BFC_LOG && !in->tri->n_reports)
            in->kind = OD_INPUT_PROFILE;
        break;
    default:
        break;
    }
    od_cli_textin_free(&r);
    return rc;
}

/* ---------- output ---------- */

static json_t *iterations_json(const od_iterations *it)
{
    if (!it || it->source == OD_ITER_NONE)
        return json_null();
    json_t *o = json_object();
    json_object_set_new(o, "source", json_string(od_iter_source_name(it->source)));
    json_object_set_new(o, "marker", json_string(it->marker));
    json_object_set_new(o, "count", json_integer((json_int_t)it->n));
    json_t *lv = json_array();
    for (size_t i = 0; i < it->n; i++)
        json_array_append_new(lv, json_integer((json_int_t)it->items[i].live_bytes));
    json_object_set_new(o, "live_bytes", lv);
    json_object_set_new(o, "growth_bytes_per_iteration",
                        it->have_fit ? json_integer((json_int_t)llround(it->fit.growth_per_x)) : json_null());
    json_object_set_new(o, "r2", it->have_fit ? json_real(round(it->fit.r2 * 1e4) / 1e4) : json_null());
    json_object_set_new(o, "trend", it->have_fit ? json_string(od_trend_verdict_name(it->fit.verdict)) : json_null());
    json_object_set_new(o, "judged_iterations", json_integer((json_int_t)it->judged));
    json_object_set_new(o, "surviving_bytes_per_iteration", json_integer((json_int_t)it->surviving_bytes_per_iteration));
    json_object_set_new(o, "held_bytes_per_iteration", json_integer((json_int_t)it->held_bytes_per_iteration));
    json_t *sv = json_array();
    for (size_t i = 0; i < it->n_survivors && i < 10; i++) {
        const od_survivor *x = &it->survivors[i];
        json_array_append_new(sv, json_pack("{s:s,s:s,s:I,s:I,s:I,s:I,s:o,s:o}", "site", x->site, "where", x->where,
                                            "bytes_per_iteration", (json_int_t)x->bytes_per_iteration, "surviving_bytes",
                                            (json_int_t)x->surviving_bytes, "iterations", (json_int_t)x->iterations,
                                            "held_at_end_bytes", (json_int_t)x->held_at_end_bytes, "released_entry",
                                            x->released_index == SIZE_MAX ? json_null() : json_integer((json_int_t)x->released_index),
                                            "released_at", x->released_at[0] ? json_string(x->released_at) : json_null()));
    }
    json_object_set_new(o, "survivors", sv);
    return o;
}

/* A full stack as "file:line:function" strings, innermost first. */
static json_t *frames_json(const od_snapshot *snap, uint32_t stack)
{
    json_t *a = json_array();
    uint32_t n;
    const uint32_t *fr = od_snapshot_stack(snap, stack, &n);
    char buf[1024];
    for (uint32_t i = 0; i < n; i++)
        json_array_append_new(a, json_string(od_frame_format(snap, fr[i], buf, sizeof buf)));
    return a;
}

static json_t *categories_json(const od_categories *c, const od_snapshot *snap)
{
    if (!c)
        return json_null();
    json_t *o = json_object();
    json_object_set_new(o, "at", json_string(c->have_peak ? "peak" : "end"));
    json_object_set_new(o, "peak_entry", c->have_peak ? json_integer((json_int_t)c->peak_entry) : json_null());
    json_object_set_new(o, "total_bytes", json_integer((json_int_t)c->total_bytes));
    json_t *b = json_object();
    for (int k = 0; k < OD_CAT_COUNT; k++) {
        json_t *x = json_object();
        json_object_set_new(x, "bytes", json_integer((json_int_t)c->bytes[k]));
        json_object_set_new(x, "count", json_integer((json_int_t)c->count[k]));
        json_object_set_new(x, "top_site", c->top_site[k][0] ? json_string(c->top_site[k]) : json_null());
        json_object_set_new(x, "basis", json_string(od_category_basis((od_category)k)));
        json_object_set_new(b, od_category_name((od_category)k), x);
    }
    json_object_set_new(o, "by_category", b);
    json_t *ts = json_array();
    for (size_t i = 0; i < c->n_top_stacks; i++) {
        char site[1024], mod[256];
        int64_t sf, wf;
        od_stack_site(snap, c->top_stacks[i].stack, &sf, &wf);
        od_frame_format(snap, sf, site, sizeof site);
        od_stack_module_path(snap, c->top_stacks[i].stack, mod, sizeof mod);
        json_array_append_new(ts, json_pack("{s:I,s:I,s:s,s:s,s:s,s:o}", "bytes", (json_int_t)c->top_stacks[i].bytes,
                                            "count", (json_int_t)c->top_stacks[i].count, "category",
                                            od_category_name(c->top_stacks[i].category), "site", site,
                                            "module_path", mod, "frames", frames_json(snap, c->top_stacks[i].stack)));
    }
    json_object_set_new(o, "top_stacks", ts);
    json_t *bm = json_array();
    for (size_t i = 0; i < c->n_top_modules; i++)
        json_array_append_new(bm, json_pack("{s:s,s:I}", "module_path", c->top_modules[i].path, "bytes",
                                            (json_int_t)c->top_modules[i].bytes));
    json_object_set_new(o, "by_module", bm);
    json_object_set_new(o, "unknown_share",
                        json_real(c->total_bytes ? round(1e4 * (double)c->bytes[OD_CAT_UNKNOWN] / (double)c->total_bytes) / 1e4 : 0));
    return o;
}

static json_t *snapshots_json(const od_diagnosis *d, const input *ins)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < d->n_snapshots; i++) {
        const od_snapshot_findings *f = &d->snapshots[i];
        const od_device_summary *s = f->figures;
        json_t *o = json_object();
        json_object_set_new(o, "file", json_string(ins[f->input].name));
        json_object_set_new(o, "device", json_integer((json_int_t)f->device));
        json_object_set_new(o, "verdict", json_string(od_verdict_name(f->verdict)));
        json_object_set_new(o, "reserved_bytes", json_integer((json_int_t)s->reserved_bytes));
        json_object_set_new(o, "allocated_bytes", json_integer((json_int_t)s->allocated_bytes));
        json_object_set_new(o, "stranded_bytes", json_integer((json_int_t)s->stranded_bytes));
        json_object_set_new(o, "largest_free_block_bytes", json_integer((json_int_t)s->largest_free_block_bytes));
        json_object_set_new(o, "peak_requested_bytes", s->has_trace ? json_integer((json_int_t)s->peak_requested_bytes) : json_null());
        const od_trace *t = s->trace;
        if (t && t->has_trace && t->n_entries)
            json_object_set_new(o, "peak", json_pack("{s:o,s:o,s:I,s:I,s:b}", "entry",
                                                     t->has_peak ? json_integer((json_int_t)t->peak_index) : json_null(),
                                                     "time_us", t->has_peak ? json_integer((json_int_t)t->peak_time_us) : json_null(),
                                                     "allocated_bytes", (json_int_t)t->peak_block_bytes,
                                                     "requested_bytes", (json_int_t)t->peak_requested_at_peak,
                                                     "from_replay", t->blocks_from_replay));
        else
            json_object_set_new(o, "peak", json_null());
        const od_inference *inf = &f->inference;
        if (inf->is_inference)
            json_object_set_new(o, "inference", json_pack("{s:I,s:I,s:b,s:I}", "decode_steps", (json_int_t)inf->decode_steps,
                                                          "kv_cache_bytes_per_token", (json_int_t)inf->kv_cache_bytes_per_token,
                                                          "recomputes_each_step", inf->recomputes_each_step,
                                                          "weights_bytes", (json_int_t)inf->weights_bytes));
        else
            json_object_set_new(o, "inference", json_null());
        json_object_set_new(o, "graph_pools", json_pack("{s:I,s:I,s:I}", "count", (json_int_t)f->graph_pools,
                                                        "segments", (json_int_t)f->graph_pool_segments,
                                                        "reserved_bytes", (json_int_t)f->graph_pool_reserved_bytes));
        if (f->have_spike)
            json_object_set_new(o, "spike", json_pack("{s:I,s:I,s:I,s:s}", "iteration", (json_int_t)f->spike_iteration,
                                                      "peak_bytes", (json_int_t)f->spike_peak_bytes,
                                                      "typical_peak_bytes", (json_int_t)f->typical_peak_bytes,
                                                      "grown_sites", f->spike_sites));
        else
            json_object_set_new(o, "spike", json_null());
        json_object_set_new(o, "iterations", iterations_json(f->iterations));
        json_object_set_new(o, "categories", categories_json(f->categories, ins[f->input].snap));
        if (f->have_oom)
            json_object_set_new(o, "oom", json_pack("{s:I,s:I,s:I,s:I,s:I}", "request_bytes", (json_int_t)f->oom_request_bytes,
                                                    "device_free_bytes", (json_int_t)f->oom_device_free_bytes,
                                                    "allocated_bytes", (json_int_t)f->oom_allocated_bytes,
                                                    "reserved_bytes", (json_int_t)f->oom_reserved_bytes,
                                                    "max_reserved_bytes", (json_int_t)f->max_reserved_bytes));
        else
            json_object_set_new(o, "oom", json_null());
        if (f->n_whatifs) {
            json_t *x = json_object(), *rs = json_array();
            json_object_set_new(x, "cap_bytes", json_integer((json_int_t)f->whatif_cap_bytes));
            json_object_set_new(x, "cap_source", json_string(f->whatif_cap_source));
            json_object_set_new(x, "reproduces_oom", json_boolean(f->whatif_reproduces));
            json_object_set_new(x, "answerable", json_boolean(!f->whatif_unanswerable));
            for (size_t k = 0; k < f->n_whatifs; k++) {
                const od_whatif *w = &f->whatifs[k];
                json_array_append_new(rs, json_pack("{s:s,s:b,s:o,s:I,s:I,s:b}", "setting", w->setting[0] ? w->setting : "(as recorded)",
                                                    "oom", w->oom, "oom_entry",
                                                    w->oom ? json_integer((json_int_t)w->oom_entry) : json_null(),
                                                    "peak_reserved_bytes", (json_int_t)w->peak_reserved_bytes,
                                                    "stranded_at_peak_bytes", (json_int_t)w->stranded_at_peak_bytes,
                                                    "approximate", w->approximate));
            }
            json_object_set_new(x, "results", rs);
            json_object_set_new(o, "whatifs", x);
        } else {
            json_object_set_new(o, "whatifs", json_null());
        }
        if (f->have_expected) {
            json_t *x = json_object(), *by = json_object();
            json_object_set_new(x, "peak_bytes", json_integer((json_int_t)f->expected_peak_bytes));
            for (int k = 0; k < OD_CAT_COUNT; k++)
                json_object_set_new(by, od_category_name((od_category)k), json_integer((json_int_t)f->expected_bytes[k]));
            json_object_set_new(x, "by_category", by);
            json_object_set_new(x, "worst_category",
                                f->worst_category < 0 ? json_null()
                                : f->worst_category == OD_CAT_COUNT
                                    ? json_string("gradients+activations+logits_and_loss")
                                    : json_string(od_category_name((od_category)f->worst_category)));
            json_object_set_new(x, "excess_bytes", f->worst_category < 0 ? json_null() : json_integer((json_int_t)f->worst_excess_bytes));
            json_object_set_new(o, "expected", x);
        } else {
            json_object_set_new(o, "expected", json_null());
        }
        json_array_append_new(arr, o);
    }
    return arr;
}

static json_t *opt_bytes(uint64_t v)
{
    return v ? json_integer((json_int_t)v) : json_null();
}

/* One do_now / long_term item: what, its effect, how it was checked, the command. */
static json_t *remedy_json(const od_remedy *m, size_t i)
{
    const od_check *c = &m->check;
    json_t *ck = json_pack("{s:s,s:o,s:o,s:o,s:s}", "method", od_check_method_name(c->method), "avoids_oom",
                           c->avoids_oom < 0 ? json_null() : json_boolean(c->avoids_oom), "predicted_peak_bytes",
                           opt_bytes(c->predicted_peak_bytes), "releases_bytes", opt_bytes(c->releases_bytes), "detail",
                           c->detail);
    return json_pack("{s:i,s:s,s:s,s:o,s:o}", "rank", (int)i + 1, "action", m->action, "effect", m->effect, "check", ck,
                     "command", m->command[0] ? json_string(m->command) : json_null());
}

static json_t *doc_json(const od_diagnosis *d, const input *ins, size_t n)
{
    json_t *doc = json_object();
    json_object_set_new(doc, "schema_version", json_integer(1));
    json_object_set_new(doc, "verdict", json_string(od_verdict_name(d->verdict)));
    json_object_set_new(doc, "growth_bytes_per_step",
                        d->verdict == OD_VERDICT_LEAK && d->have_growth_per_step
                            ? json_integer((json_int_t)llround(d->growth_bytes_per_step)) : json_null());
    if (d->verdict == OD_VERDICT_LEAK && d->have_growth_per_second)
        json_object_set_new(doc, "growth_bytes_per_second", json_integer((json_int_t)llround(d->growth_bytes_per_second)));
    json_object_set_new(doc, "site", d->site[0] ? json_string(d->site) : json_null());
    json_object_set_new(doc, "decided_by", d->decided_by != OD_NO_INPUT ? json_string(ins[d->decided_by].name) : json_null());
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
        json_t *o = json_object();
        json_object_set_new(o, "file", json_string(ins[i].name));
        json_object_set_new(o, "kind", json_string(od_input_kind_name(ins[i].kind)));
        if (ins[i].profile)
            json_object_set_new(o, "profile_kind", json_string(od_profile_kind_name(ins[i].profile->kind)));
        json_array_append_new(arr, o);
    }
    json_object_set_new(doc, "inputs", arr);
    arr = json_array();
    for (size_t i = 0; i < d->n_evidence; i++) {
        const od_evidence *e = &d->evidence[i];
        json_t *o = json_object();
        json_object_set_new(o, "text", json_string(e->text));
        json_object_set_new(o, "file", e->input != OD_NO_INPUT ? json_string(ins[e->input].name) : json_null());
        json_object_set_new(o, "key", e->key ? json_string(e->key) : json_null());
        json_object_set_new(o, "value", e->key ? (e->value == floor(e->value) && fabs(e->value) < 9e18
                                                      ? json_integer((json_int_t)e->value)
                                                      : json_real(round(e->value * 1e4) / 1e4))
                                               : json_null());
        json_array_append_new(arr, o);
    }
    json_object_set_new(doc, "evidence", arr);
    json_t *nw = json_array(), *lt = json_array();
    for (size_t i = 0; i < d->n_do_now; i++)
        json_array_append_new(nw, remedy_json(&d->do_now[i], i));
    for (size_t i = 0; i < d->n_long_term; i++)
        json_array_append_new(lt, remedy_json(&d->long_term[i], i));
    json_object_set_new(doc, "do_now", nw);
    json_object_set_new(doc, "long_term", lt);
    json_object_set_new(doc, "verify", json_string(d->verify));
    json_object_set_new(doc, "verify_command", d->verify_command[0] ? json_string(d->verify_command) : json_null());
    json_object_set_new(doc, "oom_report", d->report ? od_cli_oom_json(d->report) : json_null());
    json_object_set_new(doc, "snapshots", snapshots_json(d, ins));
    json_object_set_new(doc, "highest_snapshot",
                        d->n_snapshots > 1 ? json_string(ins[d->snapshots[d->highest_snapshot].input].name) : json_null());
    return doc;
}

static void print_remedy(const od_remedy *m, size_t i)
{
    printf("  %zu. %s\n", i + 1, m->action);
    if (m->effect[0])
        printf("     -> %s\n", m->effect);
    const od_check *c = &m->check;
    if (c->method != OD_CHECK_NONE)
        printf("     checked (%s): %s\n", od_check_method_name(c->method), c->detail);
    else if (c->detail[0])
        printf("     %s\n", c->detail);
    if (m->command[0])
        printf("     $ %s\n", m->command);
}

static void print_text(const od_diagnosis *d, const input *ins, size_t n_ins)
{
    const char *col = d->verdict == OD_VERDICT_HEALTHY ? od_c_green : d->verdict == OD_VERDICT_UNKNOWN ? od_c_yellow : od_c_red;
    printf("%sverdict: %s%s%s\n", od_c_bold, col, od_verdict_name(d->verdict), od_c_reset);
    if (d->verdict == OD_VERDICT_LEAK && d->site[0]) {
        char a[32];
        printf("  %s per iteration kept alive by %s\n",
               od_format_iec((uint64_t)llround(d->growth_bytes_per_step > 0 ? d->growth_bytes_per_step : 0), a, sizeof a),
               d->site);
    }
    if (d->n_evidence) {
        /* Grouped by input, its name once above its items (and stripped from their text);
         * what spans several inputs last. */
        printf("\n%sevidence%s\n", od_c_bold, od_c_reset);
        for (size_t pass = 0; pass <= n_ins; pass++) {
            size_t want = pass < n_ins ? pass : OD_NO_INPUT;
            int header = 0;
            for (size_t i = 0; i < d->n_evidence; i++) {
                const od_evidence *e = &d->evidence[i];
                if (e->input != want)
                    continue;
                const char *t = e->text;
                if (want != OD_NO_INPUT) {
                    size_t l = strlen(ins[want].name);
                    if (strncmp(t, ins[want].name, l) == 0 && t[l] == ':' && t[l + 1] == ' ')
                        t += l + 2;
                    if (!header++)
                        printf("  %s\n", ins[want].name);
                    printf("    - %s\n", t);
                } else {
                    printf("  - %s\n", t);
                }
            }
        }
    }
    if (d->n_do_now) {
        printf("\n%sdo now%s\n", od_c_bold, od_c_reset);
        for (size_t i = 0; i < d->n_do_now; i++)
            print_remedy(&d->do_now[i], i);
    }
    if (d->n_long_term) {
        printf("\n%slong term%s\n", od_c_bold, od_c_reset);
        for (size_t i = 0; i < d->n_long_term; i++)
            print_remedy(&d->long_term[i], i);
    }
    printf("\n%sverify%s\n  %s\n", od_c_bold, od_c_reset, d->verify);
    if (d->verify_command[0])
        printf("  $ %s\n", d->verify_command);
}

static int parse_fail_on(const char *list, int *fail_on)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int v = od_verdict_parse(tok);
        if (v >= 0)
            fail_on[v] = 1;
        else
            return od_cli_usage_error("doctor",
                                      "--fail-on: '%s' is not a verdict (capacity, fragmentation, leak, "
                                      "other_processes, cap_limit, host_memory, healthy, unknown)", tok);
    }
    return 0;
}

int od_cmd_doctor(int argc, char **argv)
{
    static const struct option opts[] = {
        {"fail-on", required_argument, NULL, 'f'},
        {"config", required_argument, NULL, 'C'},
        {"capacity", required_argument, NULL, 'c'},
        {"fraction", required_argument, NULL, 'F'},
        {"device-total", required_argument, NULL, 'T'},
        {"gpu", required_argument, NULL, 'g'},
        {"torch-version", required_argument, NULL, 'V'},
        OD_WORKLOAD_OPTIONS,
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int json = 0, c, fail_on[OD_VERDICT_COUNT] = {0}, plan_flags = 0;
    const char *config = NULL, *gpu_name = NULL, *torch_version = NULL;
    uint64_t capacity = 0, total = 0;
    double fraction = 0;
    od_workload w;
    od_workload_defaults(&w);
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'f':
            if (parse_fail_on(optarg, fail_on))
                return OD_EXIT_USAGE;
            break;
        case 'C': config = optarg; break;
        case 'c':
            if (od_cli_parse_size_opt("doctor", "--capacity", optarg, &capacity))
                return OD_EXIT_USAGE;
            break;
        case 'T':
            if (od_cli_parse_size_opt("doctor", "--device-total", optarg, &total))
                return OD_EXIT_USAGE;
            break;
        case 'F': {
            char *end = NULL;
            fraction = strtod(optarg, &end);
            if (!end || *end || !(fraction > 0 && fraction <= 1))
                return od_cli_usage_error("doctor", "--fraction: '%s' is not a number in (0, 1]", optarg);
            break;
        }
        case 'g': gpu_name = optarg; break;
        case 'V': {
            od_torch_version tv;
            if (od_torch_version_parse(optarg, &tv) != OD_OK)
                return od_cli_usage_error("doctor", "--torch-version: '%s' is not a version like 2.1.0", optarg);
            torch_version = optarg;
            break;
        }
        case 'j': json = 1; break;
        case 'h': usage(); return OD_EXIT_OK;
        case ':': return od_cli_usage_error("doctor", "option '%s' needs a value", argv[optind - 1]);
        default: {
            int r = od_cli_workload_flag("doctor", c, optarg, &w);
            if (r < 0)
                return od_cli_unknown_option("doctor", "h", opts, argv);
            if (r)
                return r;
            plan_flags = 1;
            break;
        }
        }
    }
    size_t n_files = (size_t)(argc - optind), n = n_files + (config != NULL);
    if (n_files == 0)
        return od_cli_usage_error("doctor", "expected at least one FILE");
    if (gpu_name) {
        od_gpu g;
        od_error ge;
        if (od_gpu_lookup(gpu_name, &g, &ge) != OD_OK)
            return od_cli_usage_error("doctor", "--gpu: %s", ge.msg);
        if (!total)
            total = g.memory_bytes;
    }
    if (fraction > 0) {
        if (!total)
            return od_cli_usage_error("doctor", "--fraction needs the device's memory (--gpu NAME or --device-total SIZE)");
        if (!capacity)
            capacity = (uint64_t)floor(fraction * (double)total);
    }
    input *ins = calloc(n, sizeof *ins);
    if (!ins)
        return OD_EXIT_INTERNAL;
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        ins[i].path = i < n_files ? argv[optind + (int)i] : config;
        ins[i].name = od_cli_input_name(ins[i].path);
        rc = load_input(&ins[i]);
        if (!rc && i == n_files && ins[i].kind != OD_INPUT_CONFIG) {
            od_error e;
            od_fail(&e, OD_ERR_FORMAT, "--config: not a model config.json (no model_type and hidden size)");
            rc = od_cli_report_error(ins[i].path, &e);
        }
    }
    /* The plan of the workload, for each config, when there is a snapshot to compare. */
    int any_snap = 0;
    for (size_t i = 0; i < n && !rc; i++)
        any_snap |= ins[i].kind == OD_INPUT_SNAPSHOT;
    for (size_t i = 0; i < n && !rc && any_snap; i++) {
        if (ins[i].kind != OD_INPUT_CONFIG)
            continue;
        od_error e;
        od_error_clear(&e);
        if (!ins[i].have_model) {
            od_fail(&e, OD_ERR_FORMAT, "the planner cannot read this config.json");
            rc = od_cli_report_error(ins[i].path, &e);
        } else if (od_estimate_compute(&ins[i].model, &w, &ins[i].estimate, &e) != OD_OK) {
            rc = e.status == OD_ERR_ARG ? od_cli_usage_error("doctor", "%s", e.msg) : od_cli_report_error(ins[i].path, &e);
        } else {
            ins[i].have_estimate = 1;
        }
    }
    if (!rc && plan_flags && !config) {
        int have_cfg = 0;
        for (size_t i = 0; i < n; i++)
            have_cfg |= ins[i].kind == OD_INPUT_CONFIG;
        if (!have_cfg)
            rc = od_cli_usage_error("doctor", "plan flags (--batch, --seq, ...) need a config.json (--config FILE)");
    }
    od_diag_input *di = rc ? NULL : calloc(n, sizeof *di);
    if (!rc && !di)
        rc = OD_EXIT_INTERNAL;
    if (!rc) {
        int all_nothing = 1;
        for (size_t i = 0; i < n; i++) {
            all_nothing &= ins[i].kind == OD_INPUT_NOTHING;
            di[i] = (od_diag_input){ins[i].name, ins[i].kind, ins[i].tri, ins[i].series,
                                    ins[i].have_fit ? &ins[i].fit : NULL, ins[i].snap,
                                    ins[i].have_estimate ? &ins[i].estimate : NULL, ins[i].profile};
        }
        od_diag_options opt;
        memset(&opt, 0, sizeof opt);
        opt.cap_bytes = capacity;
        opt.device_total_bytes = total;
        opt.torch_version = torch_version;
        for (size_t i = 0; i < n && !opt.model; i++)
            if (ins[i].kind == OD_INPUT_CONFIG && ins[i].have_model) {
                opt.model = &ins[i].model;
                opt.workload = &w;
                opt.config_path = ins[i].name;
            }
        od_diagnosis *d = NULL;
        od_error err;
        od_error_clear(&err);
        od_status st = od_diagnose_with(di, n, &opt, &d, &err);
        if (st != OD_OK) {
            rc = od_cli_report_error(NULL, &err);
        } else {
            if (json) {
                rc = od_cli_print_json(doc_json(d, ins, n));
            } else {
                od_cli_color_init();
                print_text(d, ins, n);
            }
            if (!rc && (fail_on[d->verdict] || all_nothing))
                rc = OD_EXIT_NOTHING;
        }
        od_diagnosis_free(d);
    }
    free(di);
    for (size_t i = 0; i < n; i++) {
        od_triage_free(ins[i].tri);
        od_series_free(ins[i].series);
        od_snapshot_free(ins[i].snap);
        od_profile_free(ins[i].profile);
    }
    free(ins);
    return rc;
}
