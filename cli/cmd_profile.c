/* cmd_profile.c - `oomdoc profile FILE... [--top N] [--json]`: what a profiler's memory
 * record says: the peak, when it happened (phase), what it was made of, and the operators
 * and source lines that allocate most. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/units.h"
#include "commands.h"
#include "oomdoc/input.h"
#include "output.h"
#include "read/profile.h"
#include "render/profilesvg.h"

static void usage(void)
{
    printf("Usage: oomdoc profile FILE... [--top N] [--svg OUT.svg] [--json]\n\n"
           "Summarize a profiler's memory record: the peak and when it happened (forward,\n"
           "backward or optimizer), what it was made of, and the operators and source lines\n"
           "that allocate most. The kind of each FILE is detected from its content (plain or\n"
           "gzipped; - is stdin):\n"
           "  PyTorch profiler Chrome trace (export_chrome_trace, profile_memory=True; read as\n"
           "    a stream), export_memory_timeline JSON, key_averages().table() text;\n"
           "  JAX save_device_memory_profile (pprof), memory_stats() as JSON;\n"
           "  XLA / TensorFlow BFC allocator log lines.\n"
           "A JAX memory profile and memory_stats given together are compared.\n\n"
           "Options:\n"
           "  --top N   entries per ranking (default 10)\n"
           "  --svg OUT write the memory timeline as an SVG chart: bytes per category stacked\n"
           "            (a memory timeline) or allocated and reserved (a trace), with the\n"
           "            forward/backward/optimizer phases of a trace given alongside shaded\n"
           "  --json    machine-readable output (schema_version 1, sizes in bytes)\n"
           "  --help    this text\n\n"
           "Example:\n"
           "  oomdoc profile tests/data/profiler/torch_profiler_trace.json.gz\n"
           "  oomdoc profile tests/data/profiler/jax_device_memory.prof tests/data/profiler/jax_memory_stats.json\n\n"
           OD_EXIT_CODES_HELP);
}

static const char *iec(uint64_t b, char *buf)
{
    return od_format_iec(b, buf, 32);
}

static const char *siec(int64_t b, char *buf)
{
    char t[32];
    od_format_iec((uint64_t)(b < 0 ? -b : b), t, sizeof t);
    snprintf(buf, 40, "%s%s", b < 0 ? "-" : "", t);
    return buf;
}

static json_t *ranking_json(const od_profile_ranking *r, size_t top, const char *count_key)
{
    json_t *a = json_array();
    for (size_t i = 0; i < r->n && i < top; i++) {
        json_t *o = json_object();
        json_object_set_new(o, "name", od_cli_json_str(r->v[i].name));
        json_object_set_new(o, "bytes", json_integer((json_int_t)r->v[i].bytes));
        json_object_set_new(o, count_key, json_integer((json_int_t)r->v[i].count));
        json_array_append_new(a, o);
    }
    return a;
}

static void print_ranking(const char *title, const od_profile_ranking *r, size_t top, const char *count_word)
{
    char b[40];
    if (!r->n)
        return;
    printf("  %s:\n", title);
    for (size_t i = 0; i < r->n && i < top; i++) {
        printf("    %12s  %s", siec(r->v[i].bytes, b), od_cli_site(r->v[i].name));
        if (count_word)
            printf("  (%llu %s)", (unsigned long long)r->v[i].count, count_word);
        printf("\n");
    }
    if (r->n > top)
        printf("    ... %zu more\n", r->n - top);
}

static double pct(uint64_t part, uint64_t whole)
{
    return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

/* Per phase: time spent and the highest allocated inside. */
static void phase_totals(const od_profile *p, double dur[OD_PHASE_COUNT], uint64_t peak[OD_PHASE_COUNT])
{
    for (int i = 0; i < OD_PHASE_COUNT; i++) {
        dur[i] = 0;
        peak[i] = 0;
    }
    for (size_t i = 0; i < p->n_spans; i++) {
        dur[p->spans[i].phase] += p->spans[i].end_us - p->spans[i].start_us;
        if (p->spans[i].peak_allocated_bytes > peak[p->spans[i].phase])
            peak[p->spans[i].phase] = p->spans[i].peak_allocated_bytes;
    }
}

static void print_trace(const od_profile *p, size_t top)
{
    char a[40], b[40];
    printf("  device cuda:%d: %zu memory events; %zu operators, %zu Python frames%s\n", p->device,
           p->n_memory_events, p->n_ops, p->n_frames, p->with_stack ? "" : " (record with with_stack=True for source lines)");
    printf("  %speak allocated: %s%s (%llu bytes) at %.3f ms", od_c_bold, iec(p->peak_allocated_bytes, a), od_c_reset,
           (unsigned long long)p->peak_allocated_bytes, p->peak_time_us / 1000.0);
    if (p->n_spans)
        printf(", during %s", od_phase_name(p->peak_phase));
    printf("\n");
    printf("  peak reserved: %s (%llu bytes)\n", iec(p->peak_reserved_bytes, a), (unsigned long long)p->peak_reserved_bytes);
    if (p->n_spans) {
        double dur[OD_PHASE_COUNT];
        uint64_t pk[OD_PHASE_COUNT];
        phase_totals(p, dur, pk);
        printf("  phases (%zu optimizer steps):\n", p->n_steps);
        for (int i = 1; i <= OD_PHASE_COUNT; i++) {
            int ph = i % OD_PHASE_COUNT;  /* forward, backward, optimizer, then other */
            if (dur[ph] <= 0)
                continue;
            printf("    %-9s %10.3f ms  peak %s%s\n", od_phase_name((od_phase)ph), dur[ph] / 1000.0, iec(pk[ph], a),
                   pk[ph] == p->peak_allocated_bytes ? "  <- the peak" : "");
        }
    }
    for (size_t i = 0; i < p->n_steps; i++)
        printf("    step %zu: peak %s, %s allocated after the optimizer step (%.3f ms)\n", i + 1,
               iec(p->steps[i].peak_allocated_bytes, a), iec(p->steps[i].allocated_bytes, b), p->steps[i].end_us / 1000.0);
    printf("  at the peak: %s from allocations inside the trace, %s allocated before it started\n",
           iec(p->peak_tracked_bytes, a), iec(p->peak_untracked_bytes, b));
    print_ranking("live at the peak by operator (innermost cpu_op)", &p->ops_at_peak, top, "allocations");
    print_ranking("live at the peak by source line (innermost frame outside libraries)", &p->sources_at_peak, top, "allocations");
    print_ranking("live at the peak by module", &p->modules_at_peak, top, "allocations");
    print_ranking("self memory by operator over the trace (key_averages' Self CUDA Mem)", &p->ops_self, top, NULL);
}

static void print_timeline(const od_profile *p)
{
    char a[40];
    printf("  %zu points over %.3f ms\n", p->n_points, p->n_points ? p->time_us[p->n_points - 1] / 1000.0 : 0.0);
    printf("  %speak: %s%s (%llu bytes) at %.3f ms\n", od_c_bold, iec(p->peak_allocated_bytes, a), od_c_reset,
           (unsigned long long)p->peak_allocated_bytes, p->peak_time_us / 1000.0);
    printf("  composition at the peak:\n");
    for (int c = 0; c < OD_PCAT_COUNT; c++)
        printf("    %-16s %12s  %5.1f%%  (%llu bytes)\n", od_profile_category_name((od_profile_category)c),
               iec(p->peak_category_bytes[c], a), pct(p->peak_category_bytes[c], p->peak_allocated_bytes),
               (unsigned long long)p->peak_category_bytes[c]);
    printf("    %-16s %12s  (%llu bytes)\n", "total", iec(p->peak_allocated_bytes, a),
           (unsigned long long)p->peak_allocated_bytes);
}

static void print_stats(const od_profile_stats *s)
{
    char a[40], b[40];
#define LINE(f) if (s->has_##f) printf("  %-26s %12s  (%llu)\n", #f, iec(s->f, a), (unsigned long long)s->f);
    LINE(bytes_in_use) LINE(peak_bytes_in_use) LINE(largest_free_block_bytes) LINE(bytes_limit)
    LINE(bytes_reserved) LINE(peak_bytes_reserved) LINE(pool_bytes) LINE(peak_pool_bytes)
    LINE(largest_alloc_size)
#undef LINE
    if (s->has_num_allocs)
        printf("  %-26s %12llu\n", "num_allocs", (unsigned long long)s->num_allocs);
    if (s->has_bytes_limit && s->has_bytes_in_use && s->bytes_limit >= s->bytes_in_use)
        printf("  free within the limit: %s\n", iec(s->bytes_limit - s->bytes_in_use, a));
    if (s->has_pool_bytes && s->has_bytes_in_use && s->has_largest_free_block_bytes && s->pool_bytes > s->bytes_in_use) {
        uint64_t fr = s->pool_bytes - s->bytes_in_use;
        printf("  free inside the pool: %s, largest free block %s (%.1f%% of it: %s)\n", iec(fr, a),
               iec(s->largest_free_block_bytes, b), pct(s->largest_free_block_bytes, fr),
               s->largest_free_block_bytes * 2 >= fr ? "little fragmentation" : "fragmented");
    }
}

static void print_bfc(const od_profile_bfc *f)
{
    char a[40], b[40], c[40];
    if (f->has_request)
        printf("  %sout of memory%s in allocator %s: request %s (%llu bytes, rounded)\n", od_c_bold, od_c_reset,
               f->allocator[0] ? od_cli_esc(f->allocator) : "?", iec(f->requested_bytes, a),
               (unsigned long long)f->requested_bytes);
    if (f->has_stats)
        printf("  stats: limit %s, in use %s, max in use %s\n", iec(f->limit_bytes, a), iec(f->in_use_bytes, b),
               iec(f->max_in_use_bytes, c));
    if (f->n_free_chunks || f->n_in_use_chunks) {
        printf("  chunks: %llu in use (%s), %llu free (%s), largest free %s\n", (unsigned long long)f->n_in_use_chunks,
               iec(f->in_use_chunk_bytes, a), (unsigned long long)f->n_free_chunks, iec(f->free_chunk_bytes, b),
               iec(f->largest_free_chunk_bytes, c));
        if (f->has_request && f->free_chunk_bytes >= f->requested_bytes && f->largest_free_chunk_bytes < f->requested_bytes)
            printf("  fragmentation: the free chunks add up to the request but none is large enough\n");
    }
    if (f->bar_cells)
        printf("  occupancy map: %llu of %llu cells free (%.1f%%)\n", (unsigned long long)f->bar_free_cells,
               (unsigned long long)f->bar_cells, pct(f->bar_free_cells, f->bar_cells));
    if (f->has_request && !f->has_stats && !f->n_free_chunks && !f->n_in_use_chunks)
        printf("  the log carries no chunk or Stats lines: no fragmentation figures (enable the allocator's\n"
               "  summary with TF_CPP_MIN_LOG_LEVEL=0 / XLA's default logging to get them)\n");
}

static json_t *stats_json(const od_profile_stats *s)
{
    json_t *o = json_object();
#define F(f) if (s->has_##f) json_object_set_new(o, #f, json_integer((json_int_t)s->f));
    F(bytes_in_use) F(peak_bytes_in_use) F(largest_free_block_bytes) F(bytes_limit)
    F(bytes_reserved) F(peak_bytes_reserved) F(pool_bytes) F(peak_pool_bytes)
    F(num_allocs) F(largest_alloc_size)
#undef F
    return o;
}

static json_t *profile_json(const char *path, const od_profile *p, size_t top)
{
    json_t *o = json_object();
    json_object_set_new(o, "file", od_cli_json_str(od_cli_input_name(path)));
    json_object_set_new(o, "kind", json_string(od_profile_kind_name(p->kind)));
    switch (p->kind) {
    case OD_PROFILE_TORCH_TRACE: {
        json_object_set_new(o, "device", json_integer(p->device));
        json_object_set_new(o, "memory_events", json_integer((json_int_t)p->n_memory_events));
        json_object_set_new(o, "operators", json_integer((json_int_t)p->n_ops));
        json_object_set_new(o, "python_frames", json_integer((json_int_t)p->n_frames));
        json_object_set_new(o, "peak_allocated_bytes", json_integer((json_int_t)p->peak_allocated_bytes));
        json_object_set_new(o, "peak_time_us", json_integer((json_int_t)llround(p->peak_time_us)));
        json_object_set_new(o, "peak_reserved_bytes", json_integer((json_int_t)p->peak_reserved_bytes));
        json_object_set_new(o, "peak_phase", p->n_spans ? json_string(od_phase_name(p->peak_phase)) : json_null());
        json_object_set_new(o, "optimizer_steps", json_integer((json_int_t)p->n_steps));
        json_t *sp = json_array();
        for (size_t i = 0; i < p->n_spans; i++) {
            json_t *s = json_object();
            json_object_set_new(s, "phase", json_string(od_phase_name(p->spans[i].phase)));
            json_object_set_new(s, "start_us", json_integer((json_int_t)llround(p->spans[i].start_us)));
            json_object_set_new(s, "end_us", json_integer((json_int_t)llround(p->spans[i].end_us)));
            json_object_set_new(s, "peak_allocated_bytes", json_integer((json_int_t)p->spans[i].peak_allocated_bytes));
            json_array_append_new(sp, s);
        }
        json_object_set_new(o, "phases", sp);
        json_t *steps = json_array();
        for (size_t i = 0; i < p->n_steps; i++) {
            json_t *s = json_object();
            json_object_set_new(s, "step", json_integer((json_int_t)i + 1));
            json_object_set_new(s, "end_us", json_integer((json_int_t)llround(p->steps[i].end_us)));
            json_object_set_new(s, "peak_allocated_bytes", json_integer((json_int_t)p->steps[i].peak_allocated_bytes));
            json_object_set_new(s, "allocated_bytes", json_integer((json_int_t)p->steps[i].allocated_bytes));
            json_object_set_new(s, "reserved_bytes", json_integer((json_int_t)p->steps[i].reserved_bytes));
            json_array_append_new(steps, s);
        }
        json_object_set_new(o, "steps", steps);
        json_object_set_new(o, "peak_tracked_bytes", json_integer((json_int_t)p->peak_tracked_bytes));
        json_object_set_new(o, "peak_untracked_bytes", json_integer((json_int_t)p->peak_untracked_bytes));
        json_object_set_new(o, "ops_at_peak", ranking_json(&p->ops_at_peak, top, "allocations"));
        json_object_set_new(o, "sources_at_peak", ranking_json(&p->sources_at_peak, top, "allocations"));
        json_object_set_new(o, "modules_at_peak", ranking_json(&p->modules_at_peak, top, "allocations"));
        json_object_set_new(o, "ops_self", ranking_json(&p->ops_self, top, "allocations"));
        break;
    }
    case OD_PROFILE_TORCH_TIMELINE: {
        json_object_set_new(o, "points", json_integer((json_int_t)p->n_points));
        json_object_set_new(o, "peak_allocated_bytes", json_integer((json_int_t)p->peak_allocated_bytes));
        json_object_set_new(o, "peak_time_us", json_integer((json_int_t)llround(p->peak_time_us)));
        json_t *c = json_object();
        for (int k = 0; k < OD_PCAT_COUNT; k++)
            json_object_set_new(c, od_profile_category_name((od_profile_category)k),
                                json_integer((json_int_t)p->peak_category_bytes[k]));
        json_object_set_new(o, "peak_composition", c);
        break;
    }
    case OD_PROFILE_TORCH_TABLE:
        json_object_set_new(o, "rounded", json_true());
        json_object_set_new(o, "ops_self", ranking_json(&p->ops_self, top, "calls"));
        break;
    case OD_PROFILE_JAX_PPROF:
        json_object_set_new(o, "live_bytes", json_integer((json_int_t)p->live_bytes));
        json_object_set_new(o, "live_buffers", json_integer((json_int_t)p->live_buffers));
        json_object_set_new(o, "by_kind", ranking_json(&p->by_kind, top, "count"));
        json_object_set_new(o, "by_device", ranking_json(&p->by_device, top, "count"));
        json_object_set_new(o, "by_source", ranking_json(&p->by_source, top, "count"));
        break;
    case OD_PROFILE_JAX_STATS:
        json_object_set_new(o, "memory_stats", stats_json(&p->stats));
        break;
    case OD_PROFILE_BFC_LOG: {
        const od_profile_bfc *f = &p->bfc;
        json_object_set_new(o, "allocator", f->allocator[0] ? od_cli_json_str(f->allocator) : json_null());
        json_object_set_new(o, "requested_bytes", f->has_request ? json_integer((json_int_t)f->requested_bytes) : json_null());
        json_object_set_new(o, "summary_follows", json_boolean(f->has_summary));
        if (f->has_stats) {
            json_object_set_new(o, "limit_bytes", json_integer((json_int_t)f->limit_bytes));
            json_object_set_new(o, "in_use_bytes", json_integer((json_int_t)f->in_use_bytes));
            json_object_set_new(o, "max_in_use_bytes", json_integer((json_int_t)f->max_in_use_bytes));
        }
        if (f->n_free_chunks || f->n_in_use_chunks) {
            json_object_set_new(o, "free_chunk_bytes", json_integer((json_int_t)f->free_chunk_bytes));
            json_object_set_new(o, "largest_free_chunk_bytes", json_integer((json_int_t)f->largest_free_chunk_bytes));
            json_object_set_new(o, "free_chunks", json_integer((json_int_t)f->n_free_chunks));
            json_object_set_new(o, "in_use_chunk_bytes", json_integer((json_int_t)f->in_use_chunk_bytes));
            json_object_set_new(o, "in_use_chunks", json_integer((json_int_t)f->n_in_use_chunks));
        }
        if (f->bar_cells) {
            json_object_set_new(o, "occupancy_cells", json_integer((json_int_t)f->bar_cells));
            json_object_set_new(o, "occupancy_free_cells", json_integer((json_int_t)f->bar_free_cells));
        }
        break;
    }
    default:
        break;
    }
    return o;
}

static const char *const kind_titles[OD_PROFILE_KIND_COUNT] = {
    "PyTorch profiler trace", "PyTorch memory timeline", "PyTorch key_averages table",
    "JAX device memory profile", "JAX memory_stats", "BFC allocator log",
};

/* Load every FILE into ps[]. 0, or the exit code after the error line. */
static int load_all(char *const *paths, int n, od_profile **ps)
{
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        FILE *f = od_cli_open(paths[i], &rc);
        if (!f)
            break;
        od_error err;
        od_error_clear(&err);
        od_input *in = NULL;
        od_status st = od_input_open_file(f, &in, &err);
        if (!st)
            st = od_profile_load(in, &ps[i], &err);
        od_input_close(in);
        od_cli_close(f);
        if (st)
            rc = od_cli_report_error(paths[i], &err);
    }
    return rc;
}

/* --svg OUT: the first input with a timeline, phases from the first trace; written beside
 * the target and renamed over it, so a failure leaves the old file. */
static int write_svg(const char *svg, od_profile *const *ps, int n)
{
    const od_profile *tl = NULL, *tr = NULL;
    for (int i = 0; i < n; i++) {
        if (!tl && ps[i]->n_points)
            tl = ps[i];
        if (!tr && ps[i]->kind == OD_PROFILE_TORCH_TRACE && ps[i]->n_spans)
            tr = ps[i];
    }
    od_error err;
    od_error_clear(&err);
    if (!tl) {
        od_fail(&err, OD_ERR_FORMAT, "--svg: no input has a memory timeline (a trace or export_memory_timeline)");
        return od_cli_report_error(NULL, &err);
    }
    od_safe_file sf;
    int rc = od_cli_safe_open(&sf, svg);
    if (rc)
        return rc;
    if (od_profile_svg_write(sf.f, tl, tr, 0, NULL, 1, &err) != OD_OK)
        return od_cli_safe_fail(&sf, &err);
    return od_cli_safe_commit_report(&sf);
}

static int print_json(char *const *paths, od_profile *const *ps, int n, size_t top, const od_profile *jp,
                      const od_profile *js)
{
    json_t *doc = json_object();
    json_object_set_new(doc, "schema_version", json_integer(1));
    json_t *arr = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(arr, profile_json(paths[i], ps[i], top));
    json_object_set_new(doc, "profiles", arr);
    if (jp && js && js->stats.has_bytes_in_use) {
        json_t *o = json_object();
        json_object_set_new(o, "profile_live_bytes", json_integer((json_int_t)jp->live_bytes));
        json_object_set_new(o, "bytes_in_use", json_integer((json_int_t)js->stats.bytes_in_use));
        json_object_set_new(o, "difference_bytes", json_integer((json_int_t)js->stats.bytes_in_use - (json_int_t)jp->live_bytes));
        json_object_set_new(doc, "jax_consistency", o);
    }
    return od_cli_print_json(doc);
}

static void print_one(const char *path, const od_profile *p, size_t top)
{
    char a[40];
    printf("%s%s%s: %s\n", od_c_bold, od_cli_input_shown(path), od_c_reset, kind_titles[p->kind]);
    switch (p->kind) {
    case OD_PROFILE_TORCH_TRACE:
        if (p->n_points == 0)
            printf("  no GPU [memory] events: record with torch.profiler.profile(profile_memory=True)\n");
        else
            print_trace(p, top);
        break;
    case OD_PROFILE_TORCH_TIMELINE:
        print_timeline(p);
        break;
    case OD_PROFILE_TORCH_TABLE:
        print_ranking("self device memory by operator (as printed: rounded)", &p->ops_self, top, "calls");
        break;
    case OD_PROFILE_JAX_PPROF:
        printf("  %slive: %s%s (%llu bytes) in %llu buffers\n", od_c_bold, iec(p->live_bytes, a), od_c_reset,
               (unsigned long long)p->live_bytes, (unsigned long long)p->live_buffers);
        print_ranking("by kind", &p->by_kind, top, "buffers");
        print_ranking("by device", &p->by_device, top, "buffers");
        print_ranking("by source line (innermost frame outside libraries)", &p->by_source, top, "buffers");
        break;
    case OD_PROFILE_JAX_STATS:
        print_stats(&p->stats);
        break;
    case OD_PROFILE_BFC_LOG:
        print_bfc(&p->bfc);
        break;
    default:
        break;
    }
}

/* The JAX profile against memory_stats, when both were given. */
static void print_jax_consistency(const od_profile *jp, const od_profile *js)
{
    char a[40], b[40], c[40];
    long long d = (long long)js->stats.bytes_in_use - (long long)jp->live_bytes;
    printf("JAX profile vs memory_stats: profile live %s, bytes_in_use %s: %s %s%s\n", iec(jp->live_bytes, a),
           iec(js->stats.bytes_in_use, b), d == 0 ? "equal" : d > 0 ? "memory_stats higher by" : "profile higher by",
           d == 0 ? "" : siec(d < 0 ? -d : d, c),
           d == 0 ? "" : " (taken at different moments, or buffers the profile does not list)");
}

int od_cmd_profile(int argc, char **argv)
{
    static const struct option opts[] = {
        {"top", required_argument, NULL, 't'},
        {"svg", required_argument, NULL, 's'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int json = 0, c;
    long top = 10;
    const char *svg = NULL;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 't':
            if (od_cli_parse_int_opt("profile", "--top", optarg, 1, 100000, &top))
                return OD_EXIT_USAGE;
            break;
        case 'j': json = 1; break;
        case 's': svg = optarg; break;
        case 'h': usage(); return OD_EXIT_OK;
        default: return od_cli_unknown_option("profile", "h", opts, argv);
        }
    }
    if (optind >= argc)
        return od_cli_usage_error("profile", "expected a FILE");
    int nfiles = argc - optind;
    char *const *paths = argv + optind;
    int rc = od_cli_refuse_output_onto_input("profile", "--svg", svg, paths, (size_t)nfiles);
    if (rc)
        return rc;
    od_cli_color_init();
    od_profile **ps = calloc((size_t)nfiles, sizeof *ps);
    if (!ps)
        return OD_EXIT_INTERNAL;
    rc = load_all(paths, nfiles, ps);
    /* A JAX profile next to memory_stats: the two views of the same device. */
    const od_profile *jp = NULL, *js = NULL;
    int nothing = 1;
    for (int i = 0; !rc && i < nfiles; i++) {
        if (ps[i]->kind == OD_PROFILE_JAX_PPROF && !jp)
            jp = ps[i];
        if (ps[i]->kind == OD_PROFILE_JAX_STATS && !js)
            js = ps[i];
        if (!(ps[i]->kind == OD_PROFILE_TORCH_TRACE && ps[i]->n_points == 0))
            nothing = 0;
    }
    if (!rc && svg)
        rc = write_svg(svg, ps, nfiles);
    if (!rc && json) {
        rc = print_json(paths, ps, nfiles, (size_t)top, jp, js);
    } else if (!rc) {
        for (int i = 0; i < nfiles; i++)
            print_one(paths[i], ps[i], (size_t)top);
        if (jp && js && js->stats.has_bytes_in_use)
            print_jax_consistency(jp, js);
        if (nothing)
            rc = OD_EXIT_NOTHING;
    }
    for (int i = 0; i < nfiles; i++)
        od_profile_free(ps[i]);
    free(ps);
    return rc;
}
