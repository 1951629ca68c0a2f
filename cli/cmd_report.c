/* cmd_report.c - `oomdoc report FILE... [-o report.html]`: one self-contained HTML page
 * with plots of whatever the inputs hold (snapshots, step logs, NVML series, OOM logs,
 * profiler records), opening with doctor's diagnosis of the same inputs and flags.
 *
 * The inputs are read by the library's loader, as doctor reads them (inputs.h); the
 * diagnosis is doctor's (diagflags.h: report takes every doctor flag), embedded in the page
 * as its document and rendered from it. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/units.h"
#include "commands.h"
#include "diagflags.h"
#include "inputs.h"
#include "model/plan.h"
#include "output.h"
#include "render/doctor_doc.h"
#include "render/report.h"

static void usage(void)
{
    printf("Usage: oomdoc report FILE... [-o report.html] [--timestamp] [--points N] [--top N]\n"
           "                            [doctor's flags: --capacity, --gpu, --config and plan flags, ...]\n\n"
           "Write one self-contained HTML page (inline SVG, CSS and script; no external URL,\n"
           "readable offline, printed, in dark mode and without JavaScript) showing what memory\n"
           "did; in a browser the timeline zooms (wheel), pans (drag) and names the allocation\n"
           "under the pointer with its full stack (click pins it). It opens\n"
           "with doctor's diagnosis of all the inputs (verdict, evidence, ranked fixes), then:\n"
           "  snapshots   live memory over trace time stacked by the top sites, reserved\n"
           "              memory, the peak and OOM events marked; live memory per iteration\n"
           "              (Optimizer.step boundaries); the segment map by block state at the\n"
           "              peak and at the end (fragmentation); live bytes by site at the\n"
           "              peak and at the end; the allocator replay's peaks\n"
           "  step logs   CSV / JSON Lines per-step logs and NVML series with their trend\n"
           "  logs        the OOM messages found in them, with triage's verdict\n"
           "  profiles    profiler records (as oomdoc profile reads them): memory over time,\n"
           "              per category for an export_memory_timeline, with the forward,\n"
           "              backward and optimizer phases of a trace of the same run shaded;\n"
           "              the peak's composition and the operators and lines live at it\n"
           "Each input's kind is detected from its content; gzip is read transparently.\n"
           "Long traces are drawn as at most N points per plot (each the highest moment of\n"
           "its interval), so pages stay small and open instantly.\n\n"
           "Options:\n"
           "  -o, --output FILE  write the page to FILE and say 'wrote FILE (SIZE)' on stderr\n"
           "                     (default: stdout, when it is not a terminal; never one of the inputs)\n"
           "  --timestamp        show when the page was made (UTC); off by default so the\n"
           "                     same inputs give the same bytes\n"
           "  --points N         points per timeline (default 2000, 2..100000)\n"
           "  --top N            sites stacked and listed (default 6, at most 8)\n"
           "  -h, --help         this help\n"
           "Every flag of oomdoc doctor, with the same meaning: the page's diagnosis is doctor's for\n"
           "the same inputs and flags (embedded as JSON, id od-diagnosis), and its Plan section\n"
           "plans the workload on the device the flags or the inputs name (none: no device line):\n"
           OD_DIAG_OPTIONS_HELP "\n"
           "Example:\n"
           "  oomdoc report tests/data/snapshots/frag_default.pickle -o report.html\n"
           "  oomdoc report tests/data/snapshots/leak_eval_no_grad.pickle \\\n"
           "      tests/data/extracted/leak_eval_no_grad_steps.csv -o leak.html\n"
           "  oomdoc report tests/data/profiler/torch_memory_timeline.json \\\n"
           "      tests/data/profiler/torch_profiler_trace.json.gz -o profile.html\n"
           "  oomdoc report tests/data/snapshots/snap_train_default.pickle \\\n"
           "      --config tests/data/extracted/snap_train_default_config.json --batch 8 --seq 512 --gpu h200\n\n"
           OD_EXIT_CODES_HELP);
}

static const char *const plan_categories[] = {"parameters", "gradients", "optimizer states", "activations",
                                              "logits and loss", "KV cache", "temporaries", "workspace"};

/* The plan of the workload the diagnosis compared (or the flags give) on the device the
 * flags or the inputs name, into *p, described in *rp (strings in title). Returns 0 or an
 * exit code (error printed). */
static int make_plan(const od_cli_diagflags *fl, const od_loaded *cfg, const od_diagnosis *d, od_plan *p,
                     od_report_plan *rp, uint64_t *bytes, char *title, size_t size)
{
    od_gpu gpu;
    od_error err;
    uint64_t total = d->device_total_bytes;
    if (fl->gpu_name && od_gpu_lookup(fl->gpu_name, &gpu, &err) == OD_OK && gpu.memory_bytes == total) {
        /* the table's GPU, by name */
    } else {
        od_gpu_custom(total ? total : (uint64_t)1 << 50, &gpu);
    }
    od_workload w = d->have_workload ? d->workload : fl->w;
    if (od_plan_compute(&cfg->model, &w, &gpu, p, &err) != OD_OK)
        return od_cli_usage_error("report", "%s", err.msg);
    const od_breakdown *b = &p->estimate.at_peak;
    uint64_t v[8] = {b->parameters, b->gradients, b->optimizer_states, b->activations,
                     b->logits_and_loss, b->kv_cache, b->temporaries, b->workspace};
    size_t n = 0;
    static const char *cats[8];
    for (size_t i = 0; i < 8; i++)
        if (v[i]) {
            cats[n] = plan_categories[i];
            bytes[n++] = v[i];
        }
    char dev[160], a[32];
    if (!total)
        snprintf(dev, sizeof dev, "no device named (--gpu NAME or --device-total SIZE): peak %s allocated",
                 od_format_iec(p->estimate.peak_allocated_bytes, a, sizeof a));
    else
        snprintf(dev, sizeof dev, "on %s%s%s (%s, %s): %s (largest batch that fits: %llu)",
                 fl->gpu_name ? fl->gpu_name : d->device_name[0] ? d->device_name : "the device",
                 "", "", od_format_iec(total, a, sizeof a), d->device_total_source ? d->device_total_source : "as given",
                 p->fits ? "fits" : "does not fit", (unsigned long long)p->max_batch);
    if (w.task == OD_TASK_INFER)
        snprintf(title, size, "%s: inference, batch %llu, prompt %llu + %llu new tokens, KV cache %s, %s.", cfg->name,
                 (unsigned long long)w.batch, (unsigned long long)w.prompt, (unsigned long long)w.new_tokens,
                 od_kv_cache_name(w.kv_cache), dev);
    else
        snprintf(title, size, "%s: batch %llu x seq %llu, %s, %s, %s attention, checkpointing %s, %s.", cfg->name,
                 (unsigned long long)w.batch, (unsigned long long)w.seq, od_precision_name(w.precision),
                 od_optimizer_name(w.optimizer), od_attention_name(w.attention), od_ckpt_name(w.ckpt), dev);
    rp->title = title;
    rp->category = cats;
    rp->bytes = bytes;
    rp->n = n;
    rp->device_bytes = total ? p->device_memory_bytes : 0;
    rp->capacity_bytes = total ? p->target_bytes : 0;
    return 0;
}

/* What each loaded input shows on the page; a config.json is not drawn (it is the plan's). */
static int report_item(const od_loaded *l, od_report_item *it)
{
    memset(it, 0, sizeof *it);
    it->name = l->name;
    it->profile = l->profile;
    switch (l->kind) {
    case OD_INPUT_SNAPSHOT: it->kind = OD_REPORT_SNAPSHOT; it->snapshot = l->snapshot; return 1;
    case OD_INPUT_SERIES: it->kind = OD_REPORT_SERIES; it->series = l->series; return 1;
    case OD_INPUT_LOG: it->kind = OD_REPORT_TRIAGE; it->triage = l->triage; return 1;
    case OD_INPUT_PROFILE: it->kind = OD_REPORT_PROFILE; return 1;
    case OD_INPUT_CONFIG:
    case OD_INPUT_NOTHING: break;
    }
    return 0;
}

int od_cli_write_page(const char *cmd, const od_cli_diagflags *fl, const od_loaded *ins, size_t n,
                      const od_diagnosis *d, const json_t *doc, const od_cli_page_opts *po, const char *output)
{
    od_report_item *items = calloc(n ? n : 1, sizeof *items);
    od_plan *plan = NULL;
    int code = 0;
    if (!items) {
        fprintf(stderr, "oomdoc: %s: out of memory\n", cmd);
        return OD_EXIT_INTERNAL;
    }
    size_t n_items = 0;
    const od_loaded *cfg = NULL;
    for (size_t i = 0; i < n; i++) {
        if (report_item(&ins[i], &items[n_items])) {
            items[n_items++].input = i;
        } else if (ins[i].kind == OD_INPUT_CONFIG) {
            if (!cfg && ins[i].have_model)
                cfg = &ins[i];
        }
    }
    /* A memory timeline is shaded with the phases of a trace of the same run given too. */
    for (size_t i = 0; i < n_items; i++) {
        const od_profile *p = items[i].kind == OD_REPORT_PROFILE ? items[i].profile : NULL;
        if (!p || !p->n_points || p->n_spans)
            continue;
        for (size_t k = 0; k < n_items && !items[i].phases; k++)
            if (items[k].kind == OD_REPORT_PROFILE && items[k].profile->kind == OD_PROFILE_TORCH_TRACE &&
                items[k].profile->n_spans)
                items[i].phases = items[k].profile;
    }
    char when[64] = "";
    if (po->timestamp) {
        time_t now = time(NULL);
        struct tm tm;
        gmtime_r(&now, &tm);
        strftime(when, sizeof when, "generated %Y-%m-%d %H:%M:%S UTC", &tm);
    }
    od_report_input in = {0};
    in.items = items;
    in.n_items = n_items;
    in.generated = po->timestamp ? when : NULL;
    in.max_points = po->points;
    in.top_sites = po->top;
    in.capacity_bytes = fl->capacity_bytes ? fl->capacity_bytes : d->device_total_bytes;
    in.diagnosis = doc;
    in.diagnosed = d;
    od_report_plan rplan;
    uint64_t plan_bytes[8];
    char plan_title[600];
    if (cfg) {
        if (!(plan = malloc(sizeof *plan))) {
            fprintf(stderr, "oomdoc: %s: out of memory\n", cmd);
            code = OD_EXIT_INTERNAL;
            goto out;
        }
        if ((code = make_plan(fl, cfg, d, plan, &rplan, plan_bytes, plan_title, sizeof plan_title)))
            goto out;
        in.plan = &rplan;
    }
    /* -o FILE: written beside FILE and renamed over it, so a failed or killed run leaves
     * the old page whole. */
    FILE *out = od_cli_raw_stdout(); /* the page is written whole, never wrapped */
    od_safe_file sf = {0};
    if (output && strcmp(output, "-") != 0) {
        if ((code = od_cli_safe_open(&sf, output)))
            goto out;
        out = sf.f;
    }
    od_error err;
    od_error_clear(&err);
    od_status st = od_report_write(&in, out, &err);
    if (st != OD_OK)
        code = sf.f ? od_cli_safe_fail(&sf, &err) : od_cli_report_error(cmd, &err);
    else if (sf.f)
        code = od_cli_safe_commit_report(&sf); /* "wrote FILE (SIZE)" */
out:
    free(plan);
    free(items);
    return code;
}

int od_cmd_report(int argc, char **argv)
{
    static const struct option opts[] = {
        {"output", required_argument, NULL, 'o'},
        {"timestamp", no_argument, NULL, 'T'},
        {"points", required_argument, NULL, 'p'},
        {"top", required_argument, NULL, 't'},
        OD_DIAG_OPTIONS,
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *output = NULL;
    int stamp = 0, c;
    long points = OD_REPORT_DEFAULT_POINTS, top = OD_REPORT_DEFAULT_SITES;
    od_cli_diagflags fl;
    od_cli_diagflags_init(&fl);
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
        switch (c) {
        case 'o': output = optarg; break;
        case 'T': stamp = 1; break;
        case 'p':
            if (od_cli_parse_int_opt("report", "--points", optarg, 2, 100000, &points))
                return OD_EXIT_USAGE;
            break;
        case 't':
            if (od_cli_parse_int_opt("report", "--top", optarg, 1, 8, &top))
                return OD_EXIT_USAGE;
            break;
        case 'h': usage(); return OD_EXIT_OK;
        default: {
            if (c == '?' && optopt == 'o')
                return od_cli_usage_error("report", "option '-o' needs a FILE");
            int r = od_cli_diagflag("report", c, optarg, &fl);
            if (r < 0)
                return od_cli_unknown_option("report", "ho:", opts, argv);
            if (r)
                return r;
            break;
        }
        }
    }
    if (optind >= argc)
        return od_cli_usage_error("report", "missing FILE");
    if (od_cli_diagflags_finish("report", &fl))
        return OD_EXIT_USAGE;
    size_t n_files = (size_t)(argc - optind), n = n_files + (fl.config != NULL);
    /* The page is HTML: on a terminal it is ~0.5 MB of noise, not a report. */
    if (!output && od_cli_stdout_tty())
        return od_cli_usage_error("report", "the page is HTML, not for a terminal: give -o FILE "
                                  "(e.g. -o report.html), or redirect stdout");
    int refused = od_cli_refuse_output_onto_input("report", "-o", output, argv + optind, n_files);
    if (refused)
        return refused;
    if (fl.config && (refused = od_cli_refuse_output_onto_input("report", "-o", output, (char **)&fl.config, 1)))
        return refused;
    char **paths = calloc(n, sizeof *paths);
    od_loaded *ins = NULL;
    od_diagnosis *d = NULL;
    json_t *doc = NULL;
    int code = 0;
    if (!paths) {
        fprintf(stderr, "oomdoc: report: out of memory\n");
        return OD_EXIT_INTERNAL;
    }
    memcpy(paths, argv + optind, n_files * sizeof *paths);
    if (fl.config)
        paths[n_files] = (char *)fl.config;
    if ((code = od_cli_load_inputs(paths, n, &ins)))
        goto out;
    for (size_t i = 0; i < n; i++)
        if (ins[i].kind == OD_INPUT_NOTHING) {
            od_error err;
            od_fail_at(&err, OD_ERR_FORMAT, 0,
                       "not a snapshot (pickle), a step log (CSV/JSON Lines with a step or time column), "
                       "a log with an OOM message, a profiler record or a model's config.json");
            code = od_cli_report_error(paths[i], &err);
            goto out;
        }
    if ((code = od_cli_diagnose("report", ins, n, &fl, &d)))
        goto out;
    if (!(doc = od_diagnosis_document(d, ins, n))) {
        fprintf(stderr, "oomdoc: report: out of memory\n");
        code = OD_EXIT_INTERNAL;
        goto out;
    }
    od_cli_page_opts po = {stamp, (size_t)points, (size_t)top};
    code = od_cli_write_page("report", &fl, ins, n, d, doc, &po, output);
    if (!code && fl.fail_on[d->verdict])
        code = OD_EXIT_NOTHING;
out:
    json_decref(doc);
    od_diagnosis_free(d);
    od_cli_inputs_free(ins, n);
    free(paths);
    return code;
}
