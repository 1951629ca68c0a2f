/* cmd_trend.c - `oomdoc trend FILE [--capacity SIZE] [--metric NAME] [--json]`: is memory
 * leaking, stable, still warming up, or spiking? */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/units.h"
#include "commands.h"
#include "render/trend_doc.h"
#include "inputs.h"
#include "model/iterations.h"
#include "output.h"
#include "read/profile.h"
#include "read/trend.h"

static void usage(void)
{
    printf("Usage: oomdoc trend FILE [--capacity SIZE] [--metric NAME] [--json]\n\n"
           "Classify a memory series as leak, stable, warming_up or spike, with the growth per\n"
           "step (per-step logs) or per second (time series) from a robust (Theil-Sen) fit that\n"
           "leaves out the warm-up, its r2, and when memory would reach --capacity.\n\n"
           "Inputs: CSV with a header, JSON Lines, or a JSON array of objects, with a step\n"
           "column (step, iter, iteration) or a time column (time_s, t: seconds) and any of\n"
           "allocated, reserved, used, peak (as written by training loops, with or without\n"
           "_bytes; _mib/_gib/_mb/_gb suffixes scale). An NVML series is time_s,used_bytes\n"
           "(what oomdoc watch writes). Gzipped input is read transparently; - is stdin.\n"
           "A memory snapshot (.pickle, .pickle.gz) gives live memory at each training\n"
           "iteration boundary (Optimizer.step annotations, or the allocation that repeats once\n"
           "per iteration), judged as a step log: growth per step is per iteration.\n"
           "A PyTorch profiler trace gives one point per optimizer step (allocated after it,\n"
           "reserved, the step's peak); an export_memory_timeline JSON a time series.\n\n"
           "Options:\n"
           "  --capacity SIZE  device memory to project against (e.g. 80GiB, 24GB, bytes)\n"
           "  --metric NAME    judge by allocated, reserved, used or peak (default: the first\n"
           "                   of allocated, used, reserved, peak that the input has)\n"
           "  --json           machine-readable output (schema_version 1, sizes in bytes)\n"
           "  --help           this text\n\n"
           "Example:\n"
           "  oomdoc trend tests/data/extracted/leak_eval_no_grad_steps.csv --capacity 24GiB\n"
           "  oomdoc trend tests/data/snapshots/leak_eval_no_grad.pickle\n\n"
           OD_EXIT_CODES_HELP);
}


static uint64_t bytes_of(double v)
{
    long long b = od_round_clamped(v);
    return b < 0 ? 0 : (uint64_t)b;
}

static const char *fmt_rate(double v, char *buf, size_t size)
{
    char b[24];
    od_format_iec((uint64_t)llabs(od_round_clamped(v)), b, sizeof b);
    snprintf(buf, size, "%s%s", v < 0 ? "-" : "", b);
    return buf;
}

static void print_fit(const od_series *s, const od_trend_fit *f, uint64_t capacity, int primary)
{
    char a[32], b[32], c[32];
    const char *unit = s->time_indexed ? "second" : "step";
    if (!primary) {
        printf("  %-16s %s, %s per %s (r2 %.4f)\n", od_metric_name(f->metric), od_trend_verdict_name(f->verdict),
               fmt_rate(f->growth_per_x, a, sizeof a), unit, f->r2);
        return;
    }
    printf("%strend of %s%s over %zu %s", od_c_bold, od_metric_name(f->metric), od_c_reset, f->n_points,
           s->time_indexed ? "samples" : "steps");
    if (f->warmup_points)
        printf(" (first %zu left out as warm-up%s)", f->warmup_points, s->time_indexed ? " or idle" : "");
    printf("\n");
    const char *col = f->verdict == OD_TREND_LEAK ? od_c_red : f->verdict == OD_TREND_STABLE ? od_c_green : od_c_yellow;
    printf("  verdict: %s%s%s\n", col, od_trend_verdict_name(f->verdict), od_c_reset);
    printf("  growth: %s per %s (Theil-Sen fit, r2 %.4f)\n", fmt_rate(f->growth_per_x, a, sizeof a), unit, f->r2);
    if (s->time_indexed)
        printf("  fitted window: %.3f s to %.3f s after the first sample, %s to %s\n", f->x_first - s->x[0],
               f->x_last - s->x[0],
               od_format_iec(bytes_of(f->first_bytes), b, sizeof b),
               od_format_iec(bytes_of(f->last_bytes), c, sizeof c));
    else
        printf("  fitted window: step %.0f to %.0f, %s to %s\n", f->x_first, f->x_last,
               od_format_iec(bytes_of(f->first_bytes), b, sizeof b),
               od_format_iec(bytes_of(f->last_bytes), c, sizeof c));
    printf("  max %s\n", od_format_iec(bytes_of(f->max_bytes), a, sizeof a));
    if (f->verdict == OD_TREND_SPIKE)
        printf("  spike: %s at %s %.*f%s, baseline %s\n", od_format_iec(bytes_of(f->spike_bytes), a, sizeof a),
               s->time_indexed ? "" : "step ", s->time_indexed ? 3 : 0,
               s->time_indexed ? f->spike_x - s->x[0] : f->spike_x, s->time_indexed ? " s" : "",
               od_format_iec(bytes_of(f->baseline_bytes), b, sizeof b));
    if (f->have_projection) {
        od_format_iec(capacity, a, sizeof a);
        if (s->time_indexed)
            printf("  projected OOM: %.1f s after the last sample (capacity %s)\n", f->projected_oom, a);
        else
            printf("  projected OOM: step %.0f (capacity %s)\n", f->projected_oom, a);
    } else if (f->verdict == OD_TREND_LEAK) {
        printf("  (give --capacity to project when it runs out)\n");
    }
    if (f->verdict == OD_TREND_LEAK && !s->time_indexed)
        printf("  look for tensors kept across steps: a loss appended without .item(), an eval loop\n"
               "  without torch.no_grad(), growing caches; oomdoc doctor on a snapshot names the site\n");
}

/* Live memory at each iteration boundary of snap (read from path; freed here), as a step
 * log into *out, the iterations into *its. Returns 0 or an exit code (message printed). */
static int series_of_snapshot(const char *path, od_snapshot *snap, int metric, od_series **out,
                              od_iterations **its_out)
{
    od_error err;
    od_error_clear(&err);
    od_iterations *its = NULL;
    for (size_t i = 0; i < snap->n_traces && !(its && its->n >= 3); i++) {
        od_iterations_free(its);
        its = NULL;
        od_trace *tr = NULL;
        if (od_trace_build(snap, snap->traces[i].device, NULL, &tr, &err) != OD_OK ||
            od_iterations_find(tr, 1, &its, &err) != OD_OK) {
            od_trace_free(tr);
            od_snapshot_free(snap);
            od_iterations_free(its);
            return od_cli_report_error(path, &err);
        }
        od_trace_free(tr);
    }
    od_snapshot_free(snap);
    if (!its || its->n < 3) {
        fprintf(stderr, "oomdoc: %s: no training iterations found in the snapshot's trace\n",
                od_cli_input_shown(path));
        od_iterations_free(its);
        return OD_EXIT_NOTHING;
    }
    od_series *s = calloc(1, sizeof *s);
    if (s) {
        s->n = its->n;
        s->x = malloc(its->n * sizeof *s->x);
        s->y[OD_METRIC_ALLOCATED] = malloc(its->n * sizeof(double));
    }
    if (!s || !s->x || !s->y[OD_METRIC_ALLOCATED]) {
        od_series_free(s);
        od_iterations_free(its);
        fprintf(stderr, "oomdoc: %s: out of memory\n", od_cli_input_shown(path));
        return OD_EXIT_INTERNAL;
    }
    for (size_t i = 0; i < its->n; i++) {
        s->x[i] = (double)i;
        s->y[OD_METRIC_ALLOCATED][i] = (double)its->items[i].live_bytes;
    }
    if (metric >= 0 && metric != OD_METRIC_ALLOCATED) {
        od_series_free(s);
        od_iterations_free(its);
        return od_cli_usage_error("trend", "--metric: a snapshot gives live (allocated) memory only");
    }
    *out = s;
    *its_out = its;
    return 0;
}

int od_cmd_trend(int argc, char **argv)
{
    static const struct option opts[] = {
        {"capacity", required_argument, NULL, 'c'},
        {"metric", required_argument, NULL, 'm'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int json = 0, c, metric = -1;
    uint64_t capacity = 0;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'c':
            if (od_cli_parse_size_opt("trend", "--capacity", optarg, &capacity))
                return OD_EXIT_USAGE;
            break;
        case 'm':
            for (int m = 0; m < OD_METRIC_COUNT; m++) {
                size_t l = strlen(optarg);
                if (!strncmp(od_metric_name((od_metric)m), optarg, l) &&
                    (od_metric_name((od_metric)m)[l] == '\0' || !strcmp(od_metric_name((od_metric)m) + l, "_bytes")))
                    metric = m;
            }
            if (metric < 0)
                return od_cli_usage_error("trend", "--metric: '%s' is not one of allocated, reserved, used, peak", optarg);
            break;
        case 'j': json = 1; break;
        case 'h': usage(); return OD_EXIT_OK;
        case ':': return od_cli_usage_error("trend", "option '%s' needs a value", argv[optind - 1]);
        default: return od_cli_unknown_option("trend", "h", opts, argv);
        }
    }
    if (argc - optind != 1)
        return od_cli_usage_error("trend", "expected one FILE (or -)");
    const char *path = argv[optind];
    int rc = OD_EXIT_OK;
    /* What kind of input: the library's loader decides, as it does for doctor and report. */
    od_loaded *in = NULL;
    if ((rc = od_cli_load_inputs((char **)&argv[optind], 1, &in)) != 0)
        return rc;
    od_error err;
    od_error_clear(&err);
    od_series *s = NULL;
    od_iterations *its = NULL;
    if (in->kind == OD_INPUT_SNAPSHOT) {
        od_snapshot *snap = in->snapshot;
        in->snapshot = NULL; /* series_of_snapshot frees it */
        od_cli_inputs_free(in, 1);
        if ((rc = series_of_snapshot(path, snap, metric, &s, &its)) != 0)
            return rc;
    } else if (in->kind == OD_INPUT_PROFILE) {
        /* A profiler record (trace, memory timeline): per-step or timed allocated. */
        od_status st = od_profile_to_series(in->profile, &s, &err);
        od_cli_inputs_free(in, 1);
        if (st)
            return od_cli_report_error(path, &err);
    } else if (in->kind == OD_INPUT_SERIES) {
        s = in->series;
        in->series = NULL;
        od_cli_inputs_free(in, 1);
    } else {
        /* not a series: the series reader's own reason, with its offset */
        err = in->series_error;
        if (err.status == OD_OK)
            od_fail_at(&err, OD_ERR_FORMAT, 0, "not a step log or series");
        od_cli_inputs_free(in, 1);
        return od_cli_report_error(path, &err);
    }
    od_metric prim = metric >= 0 ? (od_metric)metric : od_series_primary(s);
    od_trend_fit fit;
    if (od_trend_analyze(s, prim, capacity, &fit, &err) != OD_OK) {
        od_series_free(s);
        od_iterations_free(its);
        if (err.status == OD_ERR_ARG)
            return od_cli_usage_error("trend", "%s", err.msg);
        if (err.status == OD_ERR_FORMAT) {
            /* Too few points: nothing to report rather than bad input. */
            fprintf(stderr, "oomdoc: %s: %s\n", od_cli_input_shown(path), err.msg);
            return OD_EXIT_NOTHING;
        }
        return od_cli_report_error(path, &err);
    }
    /* A snapshot's iterations are judged as doctor and the report judge them: growth that
     * is released before the trace ends is bounded accumulation, not a leak. */
    int bounded = 0;
    const od_survivor *released = NULL;
    if (its && od_iterations_verdict(its, &bounded) >= 0 && bounded) {
        fit.verdict = OD_TREND_STABLE;
        fit.have_projection = 0;
        for (size_t i = 0; i < its->n_survivors && !released; i++)
            if (its->survivors[i].bytes_per_iteration && !its->survivors[i].judged_held_bytes)
                released = &its->survivors[i];
    }
    od_trend_fit others[OD_METRIC_COUNT];
    int have_other[OD_METRIC_COUNT] = {0};
    for (int m = 0; m < OD_METRIC_COUNT; m++)
        if (m != (int)prim && s->y[m] && od_trend_analyze(s, (od_metric)m, capacity, &others[m], &err) == OD_OK)
            have_other[m] = 1;
    if (json) {
        json_t *doc = od_trend_document(od_cli_input_name(path), s, its, &fit, others, have_other, capacity, bounded);
        od_series_free(s);
        od_iterations_free(its);
        return od_cli_print_json(doc);
    }
    od_cli_color_init();
    if (its) {
        char a[32];
        printf("%zu iterations on device %lld (%s: %s); live memory at each boundary:\n ", its->n,
               (long long)its->device, its->source == OD_ITER_ANNOTATIONS ? "annotation" : "repeating allocation at",
               its->marker);
        for (size_t i = 0; i < its->n; i++)
            printf(" %s%s", od_format_iec(its->items[i].live_bytes, a, sizeof a), i + 1 < its->n ? "," : "\n");
    }
    print_fit(s, &fit, capacity, 1);
    if (bounded && released)
        printf("  live memory grew at the boundaries, but what accumulated (made at %s) is released\n"
               "  at entry %zu (%s) before the trace ends: bounded accumulation, not a leak\n", released->site,
               released->released_index, released->released_at[0] ? released->released_at : "no frames");
    od_iterations_free(its);
    int any = 0;
    for (int m = 0; m < OD_METRIC_COUNT; m++)
        if (have_other[m]) {
            if (!any++)
                printf("other columns:\n");
            print_fit(s, &others[m], capacity, 0);
        }
    od_series_free(s);
    return OD_EXIT_OK;
}
