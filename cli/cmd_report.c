/* cmd_report.c - `oomdoc report FILE... [-o report.html]`: one self-contained HTML page
 * with plots of whatever the inputs hold (snapshots, step logs, NVML series, OOM logs).
 *
 * Each input's kind is detected from its bytes: a pickle (plain or gzipped) is a
 * snapshot; text that parses as a step log / series is plotted with its trend; other
 * text is searched for OOM messages. The diagnosis (doctor), replay and plan sections of
 * the page are filled through od_report_input's hooks when those modules are built in. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analyze/diagnose.h"
#include "base/units.h"
#include "commands.h"
#include "model/plan.h"
#include "output.h"
#include "planflags.h"
#include "profin.h"
#include "read/hfconfig.h"
#include "read/inputkind.h"
#include "render/report.h"
#include "snapin.h"
#include "textin.h"

static void usage(void)
{
    printf("Usage: oomdoc report FILE... [-o report.html] [--timestamp] [--capacity SIZE]\n"
           "                            [--points N] [--top N] [--config config.json plan flags]\n\n"
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
           "  -o, --output FILE  write the page to FILE (default: stdout)\n"
           "  --timestamp        show when the page was made (UTC); off by default so the\n"
           "                     same inputs give the same bytes\n"
           "  --capacity SIZE    the device memory or per-process cap the run had (e.g.\n"
           "                     80GiB): trend projections and the allocator replay's cap\n"
           "  --points N         points per timeline (default 2000, 2..100000)\n"
           "  --top N            sites stacked and listed (default 6, at most 8)\n"
           "Plan (as oomdoc plan; adds the predicted breakdown against the device):\n"
           "  --config FILE      Hugging Face config.json of the model trained\n"
           "  --batch B --seq S  micro-batch per GPU and sequence length (default 1, 1024)\n"
           "  --precision P      fp32, amp-bf16 (default), amp-fp16, bf16\n"
           "  --optimizer O      adamw (default), adamw-fused, sgd, sgd-nomom, adafactor, adam8bit\n"
           "  --attention A      sdpa (default), eager, flash\n"
           "  --checkpointing C  none (default), full, selective\n"
           "  --gpu NAME         target GPU as oomdoc plan names them (default h100-80)\n"
           "  --memory SIZE      or any device by its usable memory\n"
           "  -h, --help         this help\n\n"
           "Example:\n"
           "  oomdoc report tests/data/snapshots/frag_default.pickle -o report.html\n"
           "  oomdoc report tests/data/snapshots/leak_eval_no_grad.pickle \\\n"
           "      tests/data/extracted/leak_eval_no_grad_steps.csv -o leak.html\n"
           "  oomdoc report tests/data/profiler/torch_memory_timeline.json \\\n"
           "      tests/data/profiler/torch_profiler_trace.json.gz -o profile.html\n"
           "  oomdoc report tests/data/snapshots/snap_train_default.pickle \\\n"
           "      --config tests/data/extracted/snap_train_default_config.json --batch 8 --seq 512\n\n"
           OD_EXIT_CODES_HELP);
}

typedef struct {
    char *text;
    size_t len;
    od_snapshot *snap;
    od_series *series;
    od_triage *tri;
    od_profile *profile;
} loaded;

/* Load path into *l and describe it in *item. Returns 0 or an exit code (error printed). */
static int load(const char *path, loaded *l, od_report_item *item)
{
    int code = 0;
    od_error err;
    od_error_clear(&err);
    item->name = path;
    od_cli_text *t = od_cli_text_open(path, &code);
    if (!t)
        return code;
    /* The first bytes tell a snapshot and a profiler record: traces can be hundreds of MB,
     * so a snapshot is streamed (from a pipe too) and a profiler record from the file (a
     * pipe's is read here). A BFC allocator log is an OOM log first (below); its figures
     * ride along. */
    od_file_kind k = od_cli_text_kind(t);
    int snapshot = od_file_kind_snapshot(k);
    if (snapshot) { /* streamed, from a pipe too */
        l->snap = od_cli_text_load_snapshot(t, &code);
        od_cli_text_close(t);
        if (!l->snap)
            return code;
        item->kind = OD_REPORT_SNAPSHOT;
        item->snapshot = l->snap;
        return 0;
    }
    if (od_file_kind_profile(k) >= 0) {
        int reopen = od_cli_text_reopenable(t);
        if (!reopen && !(l->text = od_cli_text_slurp(t, &l->len, &code))) {
            od_cli_text_close(t);
            return code;
        }
        if (k == OD_FILE_BFC_LOG && reopen) {
            /* triaged as it is read, its figures streamed from the file */
            od_cli_textin r;
            code = od_cli_text_read(t, k, &r);
            od_cli_text_close(t);
            if (code)
                return code;
            l->tri = r.triage;
            r.triage = NULL;
            od_cli_textin_free(&r);
            if (!(l->profile = od_cli_load_profile(path, NULL, 0, &code)))
                return code;
            item->profile = l->profile;
            goto triaged;
        }
        od_cli_text_close(t);
        if (!(l->profile = od_cli_load_profile(path, l->text, l->len, &code)))
            return code;
        item->profile = l->profile;
        if (k != OD_FILE_BFC_LOG) {
            item->kind = OD_REPORT_PROFILE;
            return 0;
        }
        /* a BFC log from a pipe, read whole */
        if (od_triage_parse(l->text, l->len, &l->tri, &err) != OD_OK)
            return od_cli_report_error(path, &err);
        goto triaged;
    }
    /* Text: a series or a log (a config is not drawn), read once into both parsers. */
    od_cli_textin r;
    code = od_cli_text_read(t, k, &r);
    od_cli_text_close(t);
    if (code)
        return code;
    k = r.kind;
    l->series = r.series;
    l->tri = r.triage;
    r.series = NULL;
    r.triage = NULL;
    od_cli_textin_free(&r);
    if (k == OD_FILE_SERIES) {
        item->kind = OD_REPORT_SERIES;
        item->series = l->series;
        return 0;
    }
    if (k != OD_FILE_LOG)
        goto nothing;
triaged:
    if (l->tri->n_reports) {
        item->kind = OD_REPORT_TRIAGE;
        item->triage = l->tri;
        return 0;
    }
    if (l->profile) { /* a BFC log without an OOM report: its figures alone */
        item->kind = OD_REPORT_PROFILE;
        return 0;
    }
nothing: /* a config, nothing: not drawn */
    od_fail_at(&err, OD_ERR_FORMAT, 0,
               "not a snapshot (pickle), a step log (CSV/JSON Lines with a step or time column) "
               "or a log with an OOM message");
    return od_cli_report_error(path, &err);
}

static void unload(loaded *l)
{
    od_snapshot_free(l->snap);
    od_series_free(l->series);
    od_triage_free(l->tri);
    od_profile_free(l->profile);
    free(l->text);
}

/* Plan flags: the names oomdoc plan uses (lib/model/estimate.h's name functions). */
typedef struct {
    const char *config, *gpu;
    uint64_t memory;
    od_workload w;
} plan_args;

static const char *const plan_categories[] = {"parameters", "gradients", "optimizer states", "activations",
                                              "logits and loss", "KV cache", "temporaries", "workspace"};

/* Compute the plan for pa into *p and describe it in *rp (strings in title). Returns 0 or
 * an exit code (error printed). */
static int make_plan(const plan_args *pa, od_plan *p, od_report_plan *rp, uint64_t *bytes, char *title, size_t size)
{
    size_t len;
    int code = 0;
    char *text = od_cli_read_all(pa->config, &len, &code);
    if (!text)
        return code;
    od_model m;
    od_error err;
    od_status st = od_hfconfig_parse(text, len, &m, &err);
    free(text);
    if (st != OD_OK)
        return od_cli_report_error(pa->config, &err);
    od_gpu gpu;
    if (pa->memory)
        od_gpu_custom(pa->memory, &gpu);
    else if (od_gpu_lookup(pa->gpu ? pa->gpu : "h100-80", &gpu, &err) != OD_OK)
        return od_cli_usage_error("report", "--gpu: %s", err.msg);
    od_workload w = pa->w;
    w.workspace_bytes = gpu.workspace_bytes;
    if (od_plan_compute(&m, &w, &gpu, p, &err) != OD_OK)
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
    snprintf(title, size, "%s: batch %llu x seq %llu, %s, %s, %s attention, checkpointing %s, on %s: %s "
                          "(largest batch that fits: %llu).",
             pa->config, (unsigned long long)w.batch, (unsigned long long)w.seq, od_precision_name(w.precision),
             od_optimizer_name(w.optimizer), od_attention_name(w.attention), od_ckpt_name(w.ckpt), gpu.name,
             p->fits ? "fits" : "does not fit", (unsigned long long)p->max_batch);
    rp->title = title;
    rp->category = cats;
    rp->bytes = bytes;
    rp->n = n;
    rp->device_bytes = p->device_memory_bytes;
    rp->capacity_bytes = p->target_bytes;
    return 0;
}

/* doctor's diagnosis of the same inputs, in the report's terms (strings stay the
 * diagnosis's: keep it until the page is written). */
typedef struct {
    od_diagnosis *d;
    od_trend_fit *fits;
    const char **evidence;
    od_report_fix *fixes;
    od_report_diagnosis out;
} diag_view;

static int diagnose(const od_report_item *items, size_t n, const od_estimate *expected, const char *config,
                    diag_view *v)
{
    od_diag_input *in = calloc(n + 1, sizeof *in);
    v->fits = calloc(n ? n : 1, sizeof *v->fits);
    if (!in || !v->fits) {
        free(in);
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        in[i].name = items[i].name;
        switch (items[i].kind) {
        case OD_REPORT_SNAPSHOT:
            in[i].kind = OD_INPUT_SNAPSHOT;
            in[i].snapshot = items[i].snapshot;
            break;
        case OD_REPORT_SERIES:
            in[i].kind = OD_INPUT_SERIES;
            in[i].series = items[i].series;
            if (od_trend_analyze(items[i].series, od_series_primary(items[i].series), 0, &v->fits[i], NULL) == OD_OK)
                in[i].fit = &v->fits[i];
            break;
        case OD_REPORT_TRIAGE:
            in[i].kind = OD_INPUT_LOG;
            in[i].triage = items[i].triage;
            break;
        case OD_REPORT_PROFILE:
            in[i].kind = OD_INPUT_PROFILE;
            break;
        }
        in[i].profile = items[i].profile;
    }
    if (expected) { /* expected (plan) vs actual (snapshot) per category */
        in[n].name = config;
        in[n].kind = OD_INPUT_CONFIG;
        in[n].expected = expected;
        n++;
    }
    od_error err;
    od_status st = od_diagnose(in, n, &v->d, &err);
    free(in);
    if (st != OD_OK)
        return 0;
    const od_diagnosis *d = v->d;
    v->evidence = calloc(d->n_evidence ? d->n_evidence : 1, sizeof *v->evidence);
    v->fixes = calloc(d->n_do_now + d->n_long_term + 1, sizeof *v->fixes);
    if (!v->evidence || !v->fixes)
        return 0;
    for (size_t i = 0; i < d->n_evidence; i++)
        v->evidence[i] = d->evidence[i].text;
    for (size_t i = 0; i < d->n_do_now; i++)
        v->fixes[i] = (od_report_fix){d->do_now[i].action, d->do_now[i].effect[0] ? d->do_now[i].effect : NULL};
    for (size_t i = 0; i < d->n_long_term; i++)
        v->fixes[d->n_do_now + i] = (od_report_fix){d->long_term[i].action,
                                                     d->long_term[i].effect[0] ? d->long_term[i].effect : NULL};
    v->out.verdict = od_verdict_name(d->verdict);
    v->out.evidence = v->evidence;
    v->out.n_evidence = d->n_evidence;
    v->out.now = v->fixes;
    v->out.n_now = d->n_do_now;
    v->out.later = v->fixes + d->n_do_now;
    v->out.n_later = d->n_long_term;
    v->out.verify = d->verify[0] ? d->verify : NULL;
    return 1;
}

static void diag_free(diag_view *v)
{
    od_diagnosis_free(v->d);
    free(v->fits);
    free(v->evidence);
    free(v->fixes);
}

int od_cmd_report(int argc, char **argv)
{
    static const struct option opts[] = {
        {"output", required_argument, NULL, 'o'},
        {"timestamp", no_argument, NULL, 'T'},
        {"capacity", required_argument, NULL, 'c'},
        {"points", required_argument, NULL, 'p'},
        {"top", required_argument, NULL, 't'},
        {"config", required_argument, NULL, 'C'},
        OD_WORKLOAD_OPTIONS,
        {"gpu", required_argument, NULL, 'G'},
        {"memory", required_argument, NULL, 'M'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *output = NULL;
    int stamp = 0, c;
    long points = OD_REPORT_DEFAULT_POINTS, top = OD_REPORT_DEFAULT_SITES;
    uint64_t capacity = 0;
    plan_args pa = {0};
    od_workload_defaults(&pa.w);
    int plan_flag = 0;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
        switch (c) {
        case 'o': output = optarg; break;
        case 'T': stamp = 1; break;
        case 'c':
            if (od_cli_parse_size_opt("report", "--capacity", optarg, &capacity))
                return OD_EXIT_USAGE;
            break;
        case 'p':
            if (od_cli_parse_int_opt("report", "--points", optarg, 2, 100000, &points))
                return OD_EXIT_USAGE;
            break;
        case 't':
            if (od_cli_parse_int_opt("report", "--top", optarg, 1, 8, &top))
                return OD_EXIT_USAGE;
            break;
        case 'C': pa.config = optarg; break;
        case 'G': plan_flag = 1; pa.gpu = optarg; break;
        case 'M': plan_flag = 1; if (od_cli_parse_size_opt("report", "--memory", optarg, &pa.memory)) return OD_EXIT_USAGE; break;
        case 'h': usage(); return OD_EXIT_OK;
        default: {
            if (c == '?' && optopt == 'o')
                return od_cli_usage_error("report", "option '-o' needs a FILE");
            int r = od_cli_workload_flag("report", c, optarg, &pa.w);
            if (r < 0)
                return od_cli_unknown_option("report", "ho:", opts, argv);
            if (r)
                return r;
            plan_flag = 1;
            break;
        }
        }
    }
    if (optind >= argc)
        return od_cli_usage_error("report", "missing FILE");
    if (plan_flag && !pa.config)
        return od_cli_usage_error("report", "plan flags need --config config.json");
    if (pa.gpu && pa.memory)
        return od_cli_usage_error("report", "give --gpu or --memory, not both");
    size_t n = (size_t)(argc - optind);
    /* The page is HTML: on a terminal it is ~0.5 MB of noise, not a report. */
    if (!output && od_cli_stdout_tty())
        return od_cli_usage_error("report", "the page is HTML, not for a terminal: give -o FILE "
                                  "(e.g. -o report.html), or redirect stdout");
    int refused = od_cli_refuse_output_onto_input("report", "-o", output, argv + optind, n);
    if (refused)
        return refused;
    loaded *ls = calloc(n, sizeof *ls);
    od_report_item *items = calloc(n, sizeof *items);
    int code = 0;
    od_plan *plan = NULL;
    if (!ls || !items) {
        fprintf(stderr, "oomdoc: report: out of memory\n");
        free(ls);
        free(items);
        return OD_EXIT_INTERNAL;
    }
    for (size_t i = 0; i < n && !code; i++)
        code = load(argv[optind + (int)i], &ls[i], &items[i]);
    if (code)
        goto out;
    /* A memory timeline is shaded with the phases of a trace of the same run given too. */
    for (size_t i = 0; i < n; i++) {
        const od_profile *p = items[i].kind == OD_REPORT_PROFILE ? items[i].profile : NULL;
        if (!p || !p->n_points || p->n_spans)
            continue;
        for (size_t k = 0; k < n && !items[i].phases; k++)
            if (items[k].kind == OD_REPORT_PROFILE && items[k].profile->kind == OD_PROFILE_TORCH_TRACE &&
                items[k].profile->n_spans)
                items[i].phases = items[k].profile;
    }

    char when[64] = "";
    if (stamp) {
        time_t now = time(NULL);
        struct tm tm;
        gmtime_r(&now, &tm);
        strftime(when, sizeof when, "generated %Y-%m-%d %H:%M:%S UTC", &tm);
    }
    od_report_input in = {0};
    in.items = items;
    in.n_items = n;
    in.generated = stamp ? when : NULL;
    in.max_points = (size_t)points;
    in.top_sites = (size_t)top;
    in.capacity_bytes = capacity;
    od_report_plan rplan;
    uint64_t plan_bytes[7];
    char plan_title[512];
    if (pa.config) {
        plan = malloc(sizeof *plan);
        if (!plan) {
            fprintf(stderr, "oomdoc: report: out of memory\n");
            code = OD_EXIT_INTERNAL;
            goto out;
        }
        if ((code = make_plan(&pa, plan, &rplan, plan_bytes, plan_title, sizeof plan_title)))
            goto out;
        in.plan = &rplan;
    }
    diag_view dv = {0};
    if (diagnose(items, n, plan ? &plan->estimate : NULL, pa.config, &dv))
        in.diagnosis = &dv.out;

    /* -o FILE: written beside FILE and renamed over it, so a failed or killed run leaves
     * the old page whole. */
    FILE *out = od_cli_raw_stdout();
    od_safe_file sf = {0};
    if (output && strcmp(output, "-") != 0) {
        if ((code = od_cli_safe_open(&sf, output))) {
            diag_free(&dv);
            goto out;
        }
        out = sf.f;
    }
    od_error err;
    od_error_clear(&err);
    od_status st = od_report_write(&in, out, &err);
    if (st != OD_OK)
        code = sf.f ? od_cli_safe_fail(&sf, &err) : od_cli_report_error("report", &err);
    else if (sf.f)
        code = od_cli_safe_commit_report(&sf); /* "wrote FILE (SIZE)" */
    diag_free(&dv);
out:
    free(plan);
    for (size_t i = 0; i < n; i++)
        unload(&ls[i]);
    free(ls);
    free(items);
    return code;
}
