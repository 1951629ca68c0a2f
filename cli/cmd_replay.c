/* cmd_replay.c - `oomdoc replay`: replay a snapshot's trace through the allocator model,
 * under its own settings or what-if ones. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/units.h"
#include "commands.h"
#include "model/replay.h"
#include "oomdoc/snapshot.h"
#include "output.h"
#include "snapin.h"

static const char usage[] =
    "Usage: oomdoc replay FILE [options]\n"
    "Replay a memory snapshot's allocation trace through an exact model of PyTorch's CUDA\n"
    "caching allocator, under the run's own settings or what-if ones.\n"
    "\n"
    "Options:\n"
    "  --set KEY:VAL[,KEY:VAL...]  override allocator settings (PYTORCH_CUDA_ALLOC_CONF\n"
    "                              syntax; _mb values are MiB), e.g. expandable_segments:True\n"
    "  --capacity SIZE             memory cap (like set_per_process_memory_fraction);\n"
    "                              SIZE: bytes, KiB/MiB/GiB (1024), KB/MB/GB (1000)\n"
    "  --fraction F                cap = floor(F x --device-total)\n"
    "  --device-total SIZE         the device's total memory as torch reports it\n"
    "  --device N                  replay device N's trace (default: the first non-empty)\n"
    "  --verify                    check simulated segment events against the recorded ones;\n"
    "                              exit 1 when they do not all match\n"
    "  --compare 'CONF;CONF...'    one row per configuration (each applied on top of the\n"
    "                              settings above): peak reserved, stranded bytes, OOM;\n"
    "                              '(approximate)' marks rows the model cannot vouch for\n"
    "  --json                      JSON output (schema_version 1, sizes in bytes)\n"
    "  -h, --help                  this help\n"
    "\n"
    "Example:\n"
    "  oomdoc replay tests/data/snapshots/frag_default.pickle --capacity 2GiB --verify\n"
    "  oomdoc replay tests/data/snapshots/frag_default.pickle --capacity 2GiB \\\n"
    "      --compare 'expandable_segments:True;max_split_size_mb:64'\n"
    "\n" OD_EXIT_CODES_HELP;

/* The configuration as PYTORCH_CUDA_ALLOC_CONF text ("defaults" when nothing is set). */
static void describe(const od_allocsim_config *c, char *buf, size_t n)
{
    if (!od_allocsim_config_format(c, buf, n) && n) snprintf(buf, n, "defaults");
}

/* Why a what-if on a wrapped trace has no figures, in one line. */
static const char unanswerable_why[] =
    "the trace starts mid-run (its ring buffer wrapped): the segments it starts with were "
    "laid out under the run's own settings, so a replay under other settings would only "
    "repeat their figures; record from process start to answer it";

static const char *kind_name(int k)
{
    static const char *names[] = { "segment_alloc", "segment_free", "segment_map", "segment_unmap" };
    return k >= 0 && k < 4 ? names[k] : "?";
}

static json_t *seg_json(const char *kind, uint64_t addr, uint64_t size)
{
    return json_pack("{s:s, s:I, s:I}", "kind", kind, "address", (json_int_t)addr,
                     "size_bytes", (json_int_t)size);
}

static json_t *oom_json(const od_replay_result *r)
{
    if (!r->oom.happened) return json_null();
    return json_pack("{s:I, s:I, s:b, s:I, s:I, s:I, s:I}",
                     "event_index", (json_int_t)r->oom.event_index,
                     "size_bytes", (json_int_t)r->oom.size_bytes,
                     "recorded_oom", r->oom.recorded,
                     "allocated_bytes", (json_int_t)r->oom.allocated_bytes,
                     "reserved_bytes", (json_int_t)r->oom.reserved_bytes,
                     "cached_free_bytes", (json_int_t)r->oom.cached_free_bytes,
                     "largest_free_block_bytes", (json_int_t)r->oom.largest_free_bytes);
}

static json_t *segments_json(const od_replay_result *r)
{
    json_t *mm = json_null();
    if (r->has_mismatch) {
        const od_trace_entry *rec = r->mismatch_has_recorded ? &r->mismatch_recorded : NULL;
        mm = json_pack("{s:o, s:o, s:o}",
                       "trace_index", rec ? json_integer((json_int_t)r->mismatch_trace_index) : json_null(),
                       "recorded", rec ? seg_json(od_action_name((od_action)rec->action), rec->addr, rec->size) : json_null(),
                       "simulated", r->mismatch_has_simulated
                                        ? seg_json(kind_name(r->mismatch_simulated.kind), r->mismatch_simulated.addr,
                                                   r->mismatch_simulated.size)
                                        : json_null());
    }
    return json_pack("{s:I, s:I, s:I, s:I, s:I, s:o, s:b}",
                     "recorded", (json_int_t)r->seg_recorded,
                     "simulated", (json_int_t)r->seg_simulated,
                     "matched", (json_int_t)r->seg_matched,
                     "addresses_matched", (json_int_t)r->seg_addr_matched,
                     "external_releases", (json_int_t)r->external_releases,
                     "first_mismatch", mm,
                     "verified", od_replay_verified(r));
}

static void print_size(const char *label, uint64_t v)
{
    char b[32];
    printf("%-22s %s (%llu bytes)\n", label, od_format_iec(v, b, sizeof b), (unsigned long long)v);
}

/* What the command line asks for. */
typedef struct {
    const char *path;
    const char *sets[32];
    int n_sets, verify, json, have_cap, have_frac, have_total;
    uint64_t capacity, total;
    double fraction;
    long device;
    char *cmp_copy;           /* --compare's text, cut into confs */
    const char *confs[64];
    int n_confs;
} replay_args;

/* --compare 'CONF;CONF...' into a->confs, each checked; -1, or the exit code. */
static int parse_compare(replay_args *a, const char *cmd, const char *compare)
{
    od_error err;
    a->cmp_copy = strdup(compare);
    if (!a->cmp_copy) return OD_EXIT_INTERNAL;
    for (char *tok = strtok(a->cmp_copy, ";"); tok; tok = strtok(NULL, ";")) {
        while (*tok == ' ') tok++;
        if (!*tok) continue;
        if (a->n_confs == 64) return od_cli_usage_error(cmd, "--compare: at most 64 configurations");
        od_allocsim_config probe;
        od_allocsim_config_default(&probe);
        if (od_allocsim_config_parse(&probe, tok, &err)) return od_cli_usage_error(cmd, "--compare: %s", err.msg);
        a->confs[a->n_confs++] = tok;
    }
    if (!a->n_confs) return od_cli_usage_error(cmd, "--compare: no configuration given");
    return -1;
}

/* Options into *a, every configuration checked before the file is read; -1 to go on, or
 * the exit code. */
static int parse_args(int argc, char **argv, replay_args *a)
{
    static const struct option longopts[] = {
        { "set", required_argument, NULL, 's' },
        { "capacity", required_argument, NULL, 'c' },
        { "fraction", required_argument, NULL, 'f' },
        { "device-total", required_argument, NULL, 't' },
        { "device", required_argument, NULL, 'd' },
        { "verify", no_argument, NULL, 'v' },
        { "compare", required_argument, NULL, 'C' },
        { "json", no_argument, NULL, 'j' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char *cmd = "replay", *compare = NULL;
    memset(a, 0, sizeof *a);
    a->device = -1;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 's':
            if (a->n_sets == 32) return od_cli_usage_error(cmd, "too many --set options");
            a->sets[a->n_sets++] = optarg;
            break;
        case 'c':
            if (od_cli_parse_size_opt(cmd, "--capacity", optarg, &a->capacity)) return OD_EXIT_USAGE;
            if (a->capacity == 0) return od_cli_usage_error(cmd, "--capacity must be above 0");
            a->have_cap = 1;
            break;
        case 'f': {
            char *end;
            a->fraction = strtod(optarg, &end);
            if (*end || !(a->fraction > 0.0 && a->fraction <= 1.0))
                return od_cli_usage_error(cmd, "--fraction: expected a number in (0, 1], got '%s'", optarg);
            a->have_frac = 1;
            break;
        }
        case 't':
            if (od_cli_parse_size_opt(cmd, "--device-total", optarg, &a->total)) return OD_EXIT_USAGE;
            if (a->total == 0) return od_cli_usage_error(cmd, "--device-total must be above 0");
            a->have_total = 1;
            break;
        case 'd':
            if (od_cli_parse_int_opt(cmd, "--device", optarg, 0, 1024, &a->device)) return OD_EXIT_USAGE;
            break;
        case 'v': a->verify = 1; break;
        case 'C': compare = optarg; break;
        case 'j': a->json = 1; break;
        case 'h': fputs(usage, stdout); return OD_EXIT_OK;
        default:
            return od_cli_unknown_option(cmd, "h", longopts, argv);
        }
    }
    if (optind != argc - 1)
        return od_cli_usage_error(cmd, optind >= argc ? "expected one snapshot FILE" : "expected exactly one FILE");
    if (a->have_cap && a->have_frac) return od_cli_usage_error(cmd, "--capacity and --fraction exclude each other");
    if (a->have_frac && !a->have_total)
        return od_cli_usage_error(cmd, "--fraction needs --device-total (torch's total for the device)");
    a->path = argv[optind];
    od_allocsim_config over;
    od_error err;
    od_allocsim_config_default(&over);
    for (int i = 0; i < a->n_sets; i++)
        if (od_allocsim_config_parse(&over, a->sets[i], &err))
            return od_cli_usage_error(cmd, "--set: %s", err.msg);
    return compare ? parse_compare(a, cmd, compare) : -1;
}

/* The replay the options ask for: the run's own settings, --set on top, the cap. */
static void main_opts(const od_snapshot *snap, const replay_args *a, od_replay_opts *opts)
{
    memset(opts, 0, sizeof *opts);
    od_replay_config_from_snapshot(snap, &opts->cfg);
    for (int i = 0; i < a->n_sets; i++) od_allocsim_config_parse(&opts->cfg, a->sets[i], NULL);
    opts->device = a->device;
    if (a->have_total) opts->cfg.device_total_bytes = a->total;
    if (a->have_cap) opts->cfg.allowed_bytes = a->capacity;
    /* set_per_process_memory_fraction: allowed = floor(fraction x total) */
    if (a->have_frac) opts->cfg.allowed_bytes = (uint64_t)floor(a->fraction * (double)a->total);
}

/* Threads for the --compare rows: the cores this process may use. */
static unsigned replay_threads(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 64 ? 64 : (unsigned)n;
}

/* One --compare row as JSON. */
static json_t *row_json(const char *compare, const char *settings, const od_replay_result *w)
{
    json_t *row = json_pack("{s:s, s:s, s:b, s:b}", "compare", compare, "settings", settings,
                            "approximate", w->approximate, "answerable", w->answerable);
    if (w->answerable) {
        json_object_set_new(row, "peak_reserved_bytes", json_integer((json_int_t)w->stats.peak_reserved_bytes));
        json_object_set_new(row, "stranded_at_peak_bytes", json_integer((json_int_t)w->stats.stranded_at_peak_bytes));
        json_object_set_new(row, "peak_allocated_bytes", json_integer((json_int_t)w->stats.peak_allocated_bytes));
        json_object_set_new(row, "oom", oom_json(w));
    } else {
        json_object_set_new(row, "peak_reserved_bytes", json_null());
        json_object_set_new(row, "stranded_at_peak_bytes", json_null());
        json_object_set_new(row, "peak_allocated_bytes", json_null());
        json_object_set_new(row, "oom", json_null());
    }
    return row;
}

/* The --json document: r is the replay asked for, rows[1 .. n_confs] the --compare ones. */
static int print_json(const replay_args *a, const od_replay_opts *opts, const od_replay_result *rows,
                      const od_allocsim_config *row_cfg)
{
    const od_replay_result *r = &rows[0];
    char conf[512];
    describe(&opts->cfg, conf, sizeof conf);
    json_t *doc = json_object();
    int ans = r->answerable;
    /* a what-if without an answer shows no figures: they would be the run's own */
#define FIG(v) (ans ? json_integer((json_int_t)(v)) : json_null())
    json_object_set_new(doc, "schema_version", json_integer(1));
    json_object_set_new(doc, "file", json_string(od_cli_input_name(a->path)));
    json_object_set_new(doc, "device", json_integer(r->device));
    json_object_set_new(doc, "settings", json_string(conf));
    json_object_set_new(doc, "allowed_bytes", opts->cfg.allowed_bytes ? json_integer((json_int_t)opts->cfg.allowed_bytes) : json_null());
    json_object_set_new(doc, "trace_entries", json_integer((json_int_t)r->trace_entries));
    json_object_set_new(doc, "events_replayed", json_integer((json_int_t)r->events_replayed));
    json_object_set_new(doc, "approximate", json_boolean(r->approximate));
    json_object_set_new(doc, "answerable", json_boolean(ans));
    if (!ans) json_object_set_new(doc, "unanswerable_reason", json_string(unanswerable_why));
    json_object_set_new(doc, "peak_allocated_bytes", FIG(r->stats.peak_allocated_bytes));
    json_object_set_new(doc, "peak_allocated_index",
                        ans && r->peak_allocated_index < r->trace_entries
                            ? json_integer((json_int_t)r->peak_allocated_index) : json_null());
    json_object_set_new(doc, "peak_reserved_bytes", FIG(r->stats.peak_reserved_bytes));
    json_object_set_new(doc, "stranded_at_peak_bytes", FIG(r->stats.stranded_at_peak_bytes));
    json_object_set_new(doc, "final_allocated_bytes", FIG(r->stats.allocated_bytes));
    json_object_set_new(doc, "final_reserved_bytes", FIG(r->stats.reserved_bytes));
    json_object_set_new(doc, "snapshot_final", json_pack("{s:I, s:I}",
                        "allocated_bytes", (json_int_t)r->snapshot_allocated_bytes,
                        "reserved_bytes", (json_int_t)r->snapshot_reserved_bytes));
    json_object_set_new(doc, "oom", ans ? oom_json(r) : json_null());
    json_object_set_new(doc, "ooms", FIG(r->ooms));
    json_object_set_new(doc, "recorded_ooms", json_integer((json_int_t)r->recorded_ooms));
    json_object_set_new(doc, "num_alloc_retries", FIG(r->stats.num_alloc_retries));
    json_object_set_new(doc, "alloc_address_mismatches", json_integer((json_int_t)r->alloc_addr_mismatches));
    if (r->private_pools)
        json_object_set_new(doc, "private_pools", json_pack("{s:I, s:I}",
                            "pools", (json_int_t)r->private_pools,
                            "allocs_replayed", (json_int_t)r->private_allocs));
    if (r->wrapped)
        json_object_set_new(doc, "starting_state", json_pack("{s:I, s:I, s:I}",
                            "seeded_segments", (json_int_t)r->seeded_segments,
                            "seeded_blocks", (json_int_t)r->seeded_blocks,
                            "unknown_frees", (json_int_t)r->unknown_frees));
#undef FIG
    if (a->verify) json_object_set_new(doc, "segment_events", segments_json(r));
    if (a->n_confs) {
        json_t *arr = json_array();
        for (int i = 0; i < a->n_confs; i++) {
            char cd[512];
            describe(&row_cfg[i], cd, sizeof cd);
            json_array_append_new(arr, row_json(a->confs[i], cd, &rows[i + 1]));
        }
        json_object_set_new(doc, "compare", arr);
    }
    return od_cli_print_json(doc);
}

/* The text form's first lines: what was replayed, under what. */
static void print_text_head(const replay_args *a, const od_replay_opts *opts, const od_replay_result *r,
                            const char *conf)
{
    char b1[32];
    printf("%sreplay%s %s: device %lld, %zu trace entries, %s%s\n", od_c_bold, od_c_reset, a->path,
           (long long)r->device, r->trace_entries,
           r->wrapped ? "trace wrapped: starting state rebuilt, figures approximate"
           : r->approximate ? "complete trace, but the model does not reproduce it under the run's own settings"
                            : "complete trace",
           r->wrapped || !r->approximate ? ""
           : opts->cfg.allowed_bytes ? " and this cap: figures approximate"
                                     : " without a cap: figures approximate");
    printf("%-22s %s", "settings", conf);
    if (opts->cfg.allowed_bytes)
        printf(", cap %s (%llu bytes)", od_format_iec(opts->cfg.allowed_bytes, b1, sizeof b1),
               (unsigned long long)opts->cfg.allowed_bytes);
    printf("\n%-22s %llu\n", "events replayed", (unsigned long long)r->events_replayed);
    if (r->private_pools)
        printf("%-22s %llu (CUDA graph or MemPool), %llu alloc entries replayed into them\n",
               "private pools", (unsigned long long)r->private_pools, (unsigned long long)r->private_allocs);
}

/* The figures, the OOM and the segment-event check. */
static void print_text_figures(const replay_args *a, const od_replay_result *r)
{
    char b1[32], b2[32], b3[32], b4[32];
    if (!r->answerable) {
        printf("%-22s %s\n", "not answerable", unanswerable_why);
    } else {
        print_size("peak allocated", r->stats.peak_allocated_bytes);
        print_size("peak reserved", r->stats.peak_reserved_bytes);
        print_size("stranded at peak", r->stats.stranded_at_peak_bytes);
        print_size("final allocated", r->stats.allocated_bytes);
        print_size("final reserved", r->stats.reserved_bytes);
    }
    printf("%-22s %s allocated, %s reserved%s\n", "snapshot final",
           od_format_iec(r->snapshot_allocated_bytes, b1, sizeof b1),
           od_format_iec(r->snapshot_reserved_bytes, b2, sizeof b2),
           !r->answerable ? ""
           : (r->snapshot_allocated_bytes == r->stats.allocated_bytes &&
              r->snapshot_reserved_bytes == r->stats.reserved_bytes) ? " (model agrees)" : " (model differs)");
    if (!r->answerable) {
        /* no OOM line: it would be the run's own */
    } else if (r->oom.happened) {
        printf("%s%-22s event %zu: request of %s failed%s; the pool held %s reserved, %s allocated, "
               "largest free block %s%s\n",
               od_c_red, "OOM", r->oom.event_index, od_format_iec(r->oom.size_bytes, b1, sizeof b1),
               r->oom.recorded ? " (as recorded)" : "",
               od_format_iec(r->oom.reserved_bytes, b2, sizeof b2),
               od_format_iec(r->oom.allocated_bytes, b3, sizeof b3),
               od_format_iec(r->oom.largest_free_bytes, b4, sizeof b4), od_c_reset);
        if (r->ooms > 1) printf("%-22s %llu failed requests in all\n", "", (unsigned long long)r->ooms);
    } else {
        printf("%s%-22s none%s%s\n", od_c_green, "OOM", r->recorded_ooms ? " (the recorded request succeeds here)" : "", od_c_reset);
    }
    if (!a->verify) return;
    int ok = od_replay_verified(r);
    printf("%-22s recorded %llu, simulated %llu, matched %llu, external releases %llu: %s%s%s\n",
           "segment events", (unsigned long long)r->seg_recorded, (unsigned long long)r->seg_simulated,
           (unsigned long long)r->seg_matched, (unsigned long long)r->external_releases,
           ok ? od_c_green : od_c_red,
           ok ? "verified" : r->wrapped ? "not verifiable (trace wrapped)" : "MISMATCH", od_c_reset);
    if (r->has_mismatch && !r->wrapped) {
        printf("%-22s trace index %zu", "first mismatch", r->mismatch_trace_index);
        if (r->mismatch_has_simulated)
            printf(", model emitted %s of %s", kind_name(r->mismatch_simulated.kind),
                   od_format_iec(r->mismatch_simulated.size, b1, sizeof b1));
        printf("\n");
    }
}

/* The --compare table: the replay asked for, then one row per configuration. */
static void print_compare_table(const replay_args *a, const od_replay_opts *opts, const od_replay_result *rows,
                                const char *conf)
{
    char b1[32], b2[32];
    int marked = 0, unanswered = 0;
    const od_replay_result *r = &rows[0];
    printf("\n%-44s %12s %12s  %s\n", "configuration", "peak resv", "stranded", "OOM");
    for (int i = -1; i < a->n_confs; i++) {
        const od_replay_result *w = &rows[i + 1];
        char label[600];
        if (i < 0) snprintf(label, sizeof label, "(as above) %s", conf);
        else snprintf(label, sizeof label, "%s", a->confs[i]);
        printf("%-44.44s ", label);
        if (!w->answerable) {
            printf("%12s %12s  %s\n", "-", "-", "not answerable (trace wrapped)");
            unanswered = 1;
            continue;
        }
        printf("%12s %12s  %s", od_format_iec(w->stats.peak_reserved_bytes, b1, sizeof b1),
               od_format_iec(w->stats.stranded_at_peak_bytes, b2, sizeof b2),
               w->oom.happened ? "at event " : "no");
        if (w->oom.happened) printf("%zu", w->oom.event_index);
        if (w->approximate) {
            printf(" (approximate)");
            marked = 1;
        }
        printf("\n");
    }
    if (marked)
        printf("(approximate): %s\n", r->wrapped
               ? "the trace wrapped, so the starting state is rebuilt and the figures are estimates"
               : opts->cfg.allowed_bytes
                   ? "the model does not reproduce the recorded run under its own settings and "
                     "this cap (see --verify), so the figures are estimates"
                   : "the model does not reproduce the recorded run under its own settings "
                     "without a cap (see --verify), so the figures are estimates");
    if (unanswered) printf("not answerable: %s\n", unanswerable_why);
}

int od_cmd_replay(int argc, char **argv)
{
    const char *cmd = "replay";
    replay_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc >= 0) {
        free(a.cmp_copy);
        return rc;
    }
    rc = OD_EXIT_OK;
    od_cli_streamed in;
    if (!od_cli_load_streamed(a.path, &in, &rc)) {
        free(a.cmp_copy);
        return rc;
    }
    /* rows[0]: the replay asked for; rows[1 ..]: the --compare configurations on top of it,
     * all replayed at once */
    size_t n = 1 + (size_t)a.n_confs;
    od_replay_opts *opts = calloc(n, sizeof *opts);
    od_replay_result *rows = calloc(n, sizeof *rows);
    od_allocsim_config *row_cfg = calloc(n, sizeof *row_cfg);
    od_error err;
    if (!opts || !rows || !row_cfg) {
        rc = OD_EXIT_INTERNAL;
        goto done;
    }
    main_opts(in.snap, &a, &opts[0]);
    for (int i = 0; i < a.n_confs; i++) {
        opts[i + 1] = opts[0];
        od_allocsim_config_parse(&opts[i + 1].cfg, a.confs[i], NULL);
        row_cfg[i] = opts[i + 1].cfg;
    }
    od_status st = od_replay_snapshot_many(in.snap, opts, n, replay_threads(), rows, &err);
    if (st) {
        rc = st == OD_ERR_ARG ? od_cli_usage_error(cmd, "%s", err.msg) : od_cli_report_error(a.path, &err);
        goto done;
    }
    if (a.json) {
        rc = print_json(&a, &opts[0], rows, row_cfg);
    } else {
        char conf[512];
        describe(&opts[0].cfg, conf, sizeof conf);
        od_cli_color_init();
        print_text_head(&a, &opts[0], &rows[0], conf);
        print_text_figures(&a, &rows[0]);
        if (a.n_confs) print_compare_table(&a, &opts[0], rows, conf);
        if (fflush(stdout)) rc = OD_EXIT_INTERNAL;
    }
    if (rc == OD_EXIT_OK && a.verify && !od_replay_verified(&rows[0])) rc = OD_EXIT_NOTHING;
done:
    free(opts);
    free(rows);
    free(row_cfg);
    free(a.cmp_copy);
    od_cli_streamed_close(&in);
    return rc;
}
