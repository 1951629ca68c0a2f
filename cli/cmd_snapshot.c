/* cmd_snapshot.c - `oomdoc snapshot FILE`: what a memory snapshot holds. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "analyze/summary.h"
#include "base/units.h"
#include "commands.h"
#include "model/pools.h"
#include "oomdoc/snapshot.h"
#include "output.h"

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: oomdoc snapshot FILE [--json] [--top N] [--device D]\n\n"
            "Summarize a PyTorch CUDA memory snapshot (torch.cuda.memory._dump_snapshot), plain\n"
            "or gzipped, or '-' for stdin: segments, reserved/allocated/active memory, the\n"
            "largest free block, stranded memory empty_cache() cannot release, memory per\n"
            "allocator pool (default, CUDA-graph, user MemPool) and per stream, the trace's peak,\n"
            "OOM events, and live memory by source line at the end and at the peak.\n\n"
            "Options:\n"
            "  --json        one JSON document (schema_version 1), sizes in bytes\n"
            "  --top N       sites to list (default 10; the rest are summed in *_other)\n"
            "  --device D    only device D\n"
            "  -h, --help    this help\n\n"
            "Example:\n"
            "  oomdoc snapshot examples/snap_train_oom.pickle\n"
            "  oomdoc snapshot --json --top 5 examples/snap_train_oom.pickle\n\n"
            "The pickle is read as plain data: anything that would import or call code\n"
            "(GLOBAL, REDUCE, ...) is refused with the byte offset.\n\n" OD_EXIT_CODES_HELP);
}

static const char *iec(uint64_t v, char *buf)
{
    return od_format_iec(v, buf, 32);
}

/* Strings from the pickle go through od_cli_json_str: one that is not UTF-8 is repaired,
 * never the reason an entry goes missing. */
static json_t *site_json(const od_site_total *s)
{
    json_t *o = json_object();
    json_object_set_new(o, "site", od_cli_json_str(s->site));
    json_object_set_new(o, "where", od_cli_json_str(s->where));
    json_object_set_new(o, "bytes", json_integer((json_int_t)s->bytes));
    json_object_set_new(o, "requested_bytes", json_integer((json_int_t)s->requested_bytes));
    json_object_set_new(o, "count", json_integer((json_int_t)s->count));
    return o;
}

static json_t *sites_json(const od_site_list *l, size_t top)
{
    json_t *a = json_array();
    for (size_t i = 0; i < l->n && i < top; i++)
        json_array_append_new(a, site_json(&l->items[i]));
    return a;
}

static json_t *other_json(const od_site_list *l, size_t top)
{
    uint64_t bytes = 0, req = 0, count = 0, n = 0;
    for (size_t i = top; i < l->n; i++) {
        bytes += l->items[i].bytes;
        req += l->items[i].requested_bytes;
        count += l->items[i].count;
        n++;
    }
    return json_pack("{s:I, s:I, s:I, s:I}", "sites", (json_int_t)n, "bytes", (json_int_t)bytes,
                     "requested_bytes", (json_int_t)req, "count", (json_int_t)count);
}

/* The pools and streams arrays of one device (empty when it has no segments). */
static void pools_json(json_t *o, const od_device_pools *dp)
{
    json_t *pools = json_array(), *streams = json_array();
    for (size_t i = 0; dp && i < dp->n_pools; i++) {
        const od_pool_usage *p = &dp->pools[i];
        json_array_append_new(pools, json_pack("{s:[I,I], s:s, s:I, s:I, s:I}", "pool_id",
                                               (json_int_t)p->pool_id[0], (json_int_t)p->pool_id[1],
                                               "kind", od_pool_kind_name(p->kind), "segments",
                                               (json_int_t)p->segments, "reserved_bytes",
                                               (json_int_t)p->reserved_bytes, "allocated_bytes",
                                               (json_int_t)p->allocated_bytes));
    }
    for (size_t i = 0; dp && i < dp->n_streams; i++) {
        const od_stream_usage *t = &dp->streams[i];
        json_array_append_new(streams, json_pack("{s:I, s:I, s:I, s:I}", "stream", (json_int_t)t->stream,
                                                 "reserved_bytes", (json_int_t)t->reserved_bytes,
                                                 "allocated_bytes", (json_int_t)t->allocated_bytes,
                                                 "free_bytes", (json_int_t)t->free_bytes));
    }
    json_object_set_new(o, "pools", pools);
    json_object_set_new(o, "streams", streams);
}

static json_t *device_json(const od_device_summary *d, const od_device_pools *dp, size_t top)
{
    json_t *o = json_object();
    json_object_set_new(o, "device", json_integer(d->device));
    json_object_set_new(o, "segments", json_integer((json_int_t)d->segments));
    json_object_set_new(o, "reserved_bytes", json_integer((json_int_t)d->reserved_bytes));
    json_object_set_new(o, "allocated_bytes", json_integer((json_int_t)d->allocated_bytes));
    json_object_set_new(o, "requested_bytes", json_integer((json_int_t)d->requested_bytes));
    json_object_set_new(o, "active_bytes", json_integer((json_int_t)d->active_bytes));
    json_object_set_new(o, "largest_free_block_bytes", json_integer((json_int_t)d->largest_free_block_bytes));
    json_object_set_new(o, "stranded_bytes", json_integer((json_int_t)d->stranded_bytes));
    json_object_set_new(o, "expandable_segments", json_integer((json_int_t)d->expandable_segments));
    pools_json(o, dp);
    if (d->has_trace) {
        json_t *t = json_object();
        json_object_set_new(t, "entries", json_integer((json_int_t)d->entries));
        json_object_set_new(t, "start_live_requested_bytes", json_integer((json_int_t)d->start_live_requested_bytes));
        json_object_set_new(t, "complete", json_boolean(d->complete));
        json_object_set_new(t, "peak_requested_bytes", json_integer((json_int_t)d->peak_requested_bytes));
        json_object_set_new(t, "peak_time_us", d->has_peak_requested_entry ? json_integer((json_int_t)d->peak_requested_time_us) : json_null());
        json_object_set_new(t, "peak_index", d->has_peak_requested_entry ? json_integer((json_int_t)d->peak_requested_index) : json_null());
        json_object_set_new(t, "peak_allocated_bytes", json_integer((json_int_t)d->trace->peak_block_bytes));
        json_object_set_new(t, "peak_allocated_index",
                            d->trace->has_peak ? json_integer((json_int_t)d->trace->peak_index) : json_null());
        json_object_set_new(t, "peak_allocated_from_replay", json_boolean(d->trace->blocks_from_replay));
        json_t *ooms = json_array();
        for (size_t i = 0; i < d->n_ooms; i++) {
            const od_oom_event *e = &d->ooms[i];
            json_t *oe = json_object();
            json_object_set_new(oe, "size_bytes", json_integer((json_int_t)e->size_bytes));
            json_object_set_new(oe, "device_free_bytes", json_integer((json_int_t)e->device_free_bytes));
            json_object_set_new(oe, "time_us", json_integer((json_int_t)e->time_us));
            json_object_set_new(oe, "site", od_cli_json_str(e->site));
            json_object_set_new(oe, "where", od_cli_json_str(e->where));
            json_object_set_new(oe, "index", json_integer((json_int_t)e->index));
            json_array_append_new(ooms, oe);
        }
        json_object_set_new(t, "oom_events", ooms);
        json_object_set_new(o, "trace", t);
    } else {
        json_object_set_new(o, "trace", json_null());
    }
    json_object_set_new(o, "top_sites", sites_json(&d->top_sites, top));
    json_object_set_new(o, "top_sites_other", other_json(&d->top_sites, top));
    json_object_set_new(o, "peak_sites", sites_json(&d->peak_sites, top));
    json_object_set_new(o, "peak_sites_other", other_json(&d->peak_sites, top));
    return o;
}

static void print_sites(const char *title, const od_site_list *l, size_t top)
{
    char b1[32], b2[32];
    if (!l->n)
        return;
    printf("  %s%s%s\n", od_c_bold, title, od_c_reset);
    printf("    %12s %12s %7s  %s\n", "bytes", "requested", "count", "site (where)");
    uint64_t ob = 0, orq = 0, oc = 0;
    for (size_t i = 0; i < l->n; i++) {
        const od_site_total *s = &l->items[i];
        if (i >= top) {
            ob += s->bytes;
            orq += s->requested_bytes;
            oc += s->count;
            continue;
        }
        printf("    %12s %12s %7llu  %s", iec(s->bytes, b1), iec(s->requested_bytes, b2),
               (unsigned long long)s->count, od_cli_site(s->site));
        if (strcmp(s->where, s->site) != 0)
            printf(" %s(%s)%s", od_c_dim, od_cli_site(s->where), od_c_reset);
        printf("\n");
    }
    if (l->n > top)
        printf("    %12s %12s %7llu  %zu other sites\n", iec(ob, b1), iec(orq, b2), (unsigned long long)oc,
               l->n - top);
}

/* A line per pool and a line per stream, each only when there is more than one. */
static void print_pools(const od_device_pools *dp)
{
    char b1[32], b2[32], b3[32], label[64];
    for (size_t i = 0; dp && dp->n_pools > 1 && i < dp->n_pools; i++) {
        const od_pool_usage *p = &dp->pools[i];
        snprintf(label, sizeof label, "pool %s (%lld, %lld)", od_pool_kind_name(p->kind),
                 (long long)p->pool_id[0], (long long)p->pool_id[1]);
        printf("  %-19s %s reserved in %llu segment%s, %s allocated\n", label, iec(p->reserved_bytes, b1),
               (unsigned long long)p->segments, p->segments == 1 ? "" : "s", iec(p->allocated_bytes, b2));
    }
    for (size_t i = 0; dp && dp->n_streams > 1 && i < dp->n_streams; i++) {
        const od_stream_usage *t = &dp->streams[i];
        snprintf(label, sizeof label, "stream %llu", (unsigned long long)t->stream);
        printf("  %-19s %s reserved, %s allocated, %s free\n", label, iec(t->reserved_bytes, b1),
               iec(t->allocated_bytes, b2), iec(t->free_bytes, b3));
    }
}

static void print_device(const od_device_summary *d, const od_device_pools *dp, size_t top)
{
    char b[32], b2[32];
    printf("%sdevice %lld%s\n", od_c_bold, (long long)d->device, od_c_reset);
    printf("  segments            %llu%s\n", (unsigned long long)d->segments,
           d->expandable_segments ? " (expandable)" : "");
    printf("  reserved            %s\n", iec(d->reserved_bytes, b));
    printf("  allocated           %s (requested %s)\n", iec(d->allocated_bytes, b), iec(d->requested_bytes, b2));
    printf("  active              %s\n", iec(d->active_bytes, b));
    printf("  largest free block  %s\n", iec(d->largest_free_block_bytes, b));
    printf("  stranded            %s%s%s (free inside segments in use: empty_cache() cannot release it)\n",
           d->stranded_bytes ? od_c_yellow : "", iec(d->stranded_bytes, b), od_c_reset);
    print_pools(dp);
    if (!d->has_trace) {
        printf("  trace               none (this snapshot has no trace)\n");
    } else {
        if (d->complete)
            printf("  trace               %llu entries, complete\n", (unsigned long long)d->entries);
        else
            printf("  trace               %llu entries, starts mid-run: %s requested already live "
                   "(ring buffer wrapped or recording started late)\n",
                   (unsigned long long)d->entries, iec(d->start_live_requested_bytes, b));
        if (d->has_peak_requested_entry)
            printf("  peak requested      %s at entry %zu (+%.3f s)\n", iec(d->peak_requested_bytes, b),
                   d->peak_requested_index, (double)(d->peak_requested_time_us - d->first_time_us) / 1e6);
        else
            printf("  peak requested      %s (at the start)\n", iec(d->peak_requested_bytes, b));
        if (d->trace->has_peak)
            printf("  peak allocated      %s at entry %zu (+%.3f s; %s)\n", iec(d->trace->peak_block_bytes, b),
                   d->trace->peak_index, (double)(d->trace->peak_time_us - d->first_time_us) / 1e6,
                   d->trace->blocks_from_replay ? "block sizes from the allocator replay"
                                                : "requests rounded to 512 B");
        for (size_t i = 0; i < d->n_ooms; i++) {
            const od_oom_event *e = &d->ooms[i];
            printf("  %sOOM%s                 entry %zu: tried to allocate %s with %s free on the device, at %s\n",
                   od_c_red, od_c_reset, e->index, iec(e->size_bytes, b), iec(e->device_free_bytes, b2),
                   od_cli_site(e->site));
        }
    }
    print_sites("live at the end, by site", &d->top_sites, top);
    print_sites(d->trace && d->trace->blocks_from_replay ? "live at the peak, by site (block bytes from the replay)"
                                                         : "live at the peak, by site (bytes: blocks, or requests rounded to 512 B)",
                &d->peak_sites, top);
}

int od_cmd_snapshot(int argc, char **argv)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'},
        {"top", required_argument, NULL, 't'},
        {"device", required_argument, NULL, 'd'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int json = 0, c;
    long top = 10, device = -1;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'j': json = 1; break;
        case 't':
            if (od_cli_parse_int_opt("snapshot", "--top", optarg, 0, 1000000, &top))
                return OD_EXIT_USAGE;
            break;
        case 'd':
            if (od_cli_parse_int_opt("snapshot", "--device", optarg, 0, 1023, &device))
                return OD_EXIT_USAGE;
            break;
        case 'h': usage(stdout); return OD_EXIT_OK;
        default:
            return od_cli_unknown_option("snapshot", "h", opts, argv);
        }
    }
    if (optind != argc - 1)
        return od_cli_usage_error("snapshot", optind >= argc ? "missing FILE" : "expected one FILE");
    const char *path = argv[optind];
    int code = 0;
    FILE *f = od_cli_open(path, &code);
    if (!f)
        return code;
    od_input *in = NULL;
    od_snapshot *snap = NULL;
    od_summary *sum = NULL;
    od_pools *pools = NULL;
    od_error err;
    od_status st = od_input_open_file(f, &in, &err);
    if (st == OD_OK)
        st = od_snapshot_load(in, &snap, &err);
    if (st == OD_OK)
        st = od_summarize(snap, &sum, &err);
    if (st == OD_OK)
        st = od_pools_compute(snap, &pools, &err);
    if (st != OD_OK) {
        code = od_cli_report_error(path, &err);
        goto out;
    }
    if (device >= 0) {
        size_t k = 0;
        for (size_t i = 0; i < sum->n_devices; i++)
            if (sum->devices[i].device == device)
                k = i + 1;
        if (!k) {
            fprintf(stderr, "oomdoc: %s: no device %ld in this snapshot\n", od_cli_input_shown(path), device);
            code = OD_EXIT_NOTHING;
            goto out;
        }
    }
    if (json) {
        json_t *doc = json_object();
        json_object_set_new(doc, "schema_version", json_integer(1));
        json_object_set_new(doc, "file", od_cli_json_str(od_cli_input_name(path)));
        json_object_set_new(doc, "torch_layout", json_string(snap->torch_major == 1 ? "1.13" : "2.x"));
        json_object_set_new(doc, "allocator_settings",
                            snap->settings.present ? od_cli_json_str(snap->settings.alloc_conf) : json_null());
        json_t *devs = json_array();
        for (size_t i = 0; i < sum->n_devices; i++)
            if (device < 0 || sum->devices[i].device == device)
                json_array_append_new(devs, device_json(&sum->devices[i],
                                                        od_pools_device(pools, sum->devices[i].device),
                                                        (size_t)top));
        json_object_set_new(doc, "devices", devs);
        code = od_cli_print_json(doc);
    } else {
        printf("%s%s%s: torch %s snapshot, allocator settings: %s\n", od_c_bold, od_cli_input_shown(path),
               od_c_reset, snap->torch_major == 1 ? "1.13" : "2.x",
               !snap->settings.present ? "not recorded"
               : snap->settings.alloc_conf[0] ? od_cli_esc(snap->settings.alloc_conf) : "default");
        if (!sum->n_devices)
            printf("no device holds memory in this snapshot\n");
        for (size_t i = 0; i < sum->n_devices; i++)
            if (device < 0 || sum->devices[i].device == device)
                print_device(&sum->devices[i], od_pools_device(pools, sum->devices[i].device),
                             (size_t)top);
    }
out:
    od_pools_free(pools);
    od_summary_free(sum);
    od_snapshot_free(snap);
    od_input_close(in);
    od_cli_close(f);
    return code;
}
