/* cmd_diff.c - `oomdoc diff BEFORE AFTER [--json]`: two snapshots compared (before/after a
 * fix, rank vs rank): the allocator settings, reserved, allocated, stranded, the trace's
 * peaks (block bytes, reserved, requested), and live bytes by site. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/snapdiff.h"
#include "base/units.h"
#include "commands.h"
#include "output.h"
#include "snapin.h"

#define TEXT_SITES 15

static void usage(void)
{
    printf("Usage: oomdoc diff BEFORE AFTER [--sites N] [--json]\n\n"
           "Compare two memory snapshots (before and after a fix, or one rank against another):\n"
           "the allocator settings when they differ, the change in reserved, allocated and\n"
           "stranded bytes, in the trace's peaks - allocated (block bytes, what\n"
           "max_memory_allocated() reports), reserved (max_memory_reserved()) and requested -\n"
           "and in live bytes by source site (at the end and at the peak), largest change\n"
           "first. Single-device snapshots are paired whatever their device numbers (ranks).\n\n"
           "Options:\n"
           "  --sites N  sites listed per table in text output (default %d; JSON lists all)\n"
           "  --json     machine-readable output (schema_version 1, sizes in bytes)\n"
           "  --help     this text\n\n"
           "Example:\n"
           "  oomdoc diff tests/data/snapshots/snap_train_default.pickle tests/data/snapshots/snap_train_expandable.pickle\n\n"
           OD_EXIT_CODES_HELP, TEXT_SITES);
}

static const char *signed_iec(int64_t v, char *buf, size_t size)
{
    char b[32];
    uint64_t m = v < 0 ? (uint64_t)(-(v + 1)) + 1 : (uint64_t)v;
    od_format_iec(m, b, sizeof b);
    snprintf(buf, size, "%s%s", v < 0 ? "-" : v > 0 ? "+" : "", b);
    return buf;
}

static int64_t change(uint64_t after, uint64_t before)
{
    uint64_t a = after > INT64_MAX ? INT64_MAX : after, b = before > INT64_MAX ? INT64_MAX : before;
    return (int64_t)a - (int64_t)b;
}

static const char *fmt_count(uint64_t v, char *buf, size_t size)
{
    snprintf(buf, size, "%llu", (unsigned long long)v);
    return buf;
}

static const char *fmt_count_change(int64_t v, char *buf, size_t size)
{
    snprintf(buf, size, "%+lld", (long long)v);
    return buf;
}

static void row(const char *name, uint64_t b, uint64_t a, int have_b, int have_a)
{
    char x[32], y[32], z[40];
    printf("  %-18s %14s %14s %15s\n", name, have_b ? od_format_iec(b, x, sizeof x) : "-",
           have_a ? od_format_iec(a, y, sizeof y) : "-", have_b && have_a ? signed_iec(change(a, b), z, sizeof z) : "-");
}

static void sites_text(const char *title, const od_site_change *l, size_t n, long limit)
{
    char x[32], y[32], z[40];
    size_t shown = 0;
    for (size_t i = 0; i < n; i++)
        shown += l[i].change_bytes != 0;
    if (!shown)
        return;
    printf("  %s (largest change first)\n", title);
    printf("  %15s %14s %14s  site (where)\n", "change", "before", "after");
    shown = 0;
    for (size_t i = 0; i < n && (long)shown < limit; i++) {
        if (l[i].change_bytes == 0)
            continue;
        shown++;
        int same = strcmp(l[i].site, l[i].where) == 0;
        printf("  %15s %14s %14s  %s%s%s%s\n", signed_iec(l[i].change_bytes, z, sizeof z),
               od_format_iec(l[i].before_bytes, x, sizeof x), od_format_iec(l[i].after_bytes, y, sizeof y),
               od_cli_site(l[i].site), same ? "" : " (", same ? "" : od_cli_site(l[i].where), same ? "" : ")");
    }
}

static json_t *fig(uint64_t b, uint64_t a, int have_b, int have_a)
{
    json_t *o = json_object();
    json_object_set_new(o, "before", have_b ? json_integer((json_int_t)(b > INT64_MAX ? INT64_MAX : b)) : json_null());
    json_object_set_new(o, "after", have_a ? json_integer((json_int_t)(a > INT64_MAX ? INT64_MAX : a)) : json_null());
    json_object_set_new(o, "change", have_b && have_a ? json_integer((json_int_t)change(a, b)) : json_null());
    return o;
}

static json_t *sites_json(const od_site_change *l, size_t n)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
        json_t *o = json_object();
        json_object_set_new(o, "site", od_cli_json_str(l[i].site));
        json_object_set_new(o, "where", od_cli_json_str(l[i].where));
        json_object_set_new(o, "before_bytes", json_integer((json_int_t)(l[i].before_bytes > INT64_MAX ? INT64_MAX : l[i].before_bytes)));
        json_object_set_new(o, "after_bytes", json_integer((json_int_t)(l[i].after_bytes > INT64_MAX ? INT64_MAX : l[i].after_bytes)));
        json_object_set_new(o, "change_bytes", json_integer((json_int_t)l[i].change_bytes));
        json_array_append_new(arr, o);
    }
    return arr;
}

static json_t *settings_json(const od_snapdiff *d)
{
    json_t *o = json_object();
    json_object_set_new(o, "before", d->settings_recorded[0] ? od_cli_json_str(d->settings[0]) : json_null());
    json_object_set_new(o, "after", d->settings_recorded[1] ? od_cli_json_str(d->settings[1]) : json_null());
    json_object_set_new(o, "differ", json_boolean(d->settings_differ));
    return o;
}

static json_t *device_json(const od_device_change *x)
{
    int hb = x->device_before >= 0, ha = x->device_after >= 0;
    json_t *o = json_object();
    json_object_set_new(o, "device_before", hb ? json_integer((json_int_t)x->device_before) : json_null());
    json_object_set_new(o, "device_after", ha ? json_integer((json_int_t)x->device_after) : json_null());
    json_object_set_new(o, "segments", fig(x->segments[0], x->segments[1], hb, ha));
    json_object_set_new(o, "reserved_bytes", fig(x->reserved[0], x->reserved[1], hb, ha));
    json_object_set_new(o, "allocated_bytes", fig(x->allocated[0], x->allocated[1], hb, ha));
    json_object_set_new(o, "stranded_bytes", fig(x->stranded[0], x->stranded[1], hb, ha));
    json_object_set_new(o, "peak_allocated_bytes", fig(x->peak_allocated[0], x->peak_allocated[1],
                                                       hb && x->have_peak[0], ha && x->have_peak[1]));
    json_object_set_new(o, "peak_reserved_bytes", fig(x->peak_reserved[0], x->peak_reserved[1],
                                                      hb && x->have_reserved[0], ha && x->have_reserved[1]));
    json_object_set_new(o, "peak_requested_bytes",
                        fig(x->peak[0], x->peak[1], hb && x->have_peak[0], ha && x->have_peak[1]));
    json_object_set_new(o, "live_by_site", sites_json(x->live, x->n_live));
    json_object_set_new(o, "peak_by_site", sites_json(x->at_peak, x->n_at_peak));
    return o;
}

static void print_device(const od_device_change *x, long limit)
{
    int hb = x->device_before >= 0, ha = x->device_after >= 0;
    char ca[32], cb[32], cc[32];
    if (x->device_before == x->device_after)
        printf("device %lld\n", (long long)x->device_before);
    else
        printf("device %s%lld -> %s%lld\n", hb ? "" : "(none) ", (long long)x->device_before,
               ha ? "" : "(none) ", (long long)x->device_after);
    printf("  %-18s %14s %14s %15s\n", "", "before", "after", "change");
    printf("  %-18s %14s %14s %15s\n", "segments", hb ? fmt_count(x->segments[0], ca, sizeof ca) : "-",
           ha ? fmt_count(x->segments[1], cb, sizeof cb) : "-",
           hb && ha ? fmt_count_change(change(x->segments[1], x->segments[0]), cc, sizeof cc) : "-");
    row("reserved", x->reserved[0], x->reserved[1], hb, ha);
    row("allocated", x->allocated[0], x->allocated[1], hb, ha);
    row("stranded", x->stranded[0], x->stranded[1], hb, ha);
    if (x->have_peak[0] || x->have_peak[1]) {
        row("peak allocated", x->peak_allocated[0], x->peak_allocated[1], hb && x->have_peak[0], ha && x->have_peak[1]);
        row("peak reserved", x->peak_reserved[0], x->peak_reserved[1], hb && x->have_reserved[0],
            ha && x->have_reserved[1]);
    }
    row("peak requested", x->peak[0], x->peak[1], hb && x->have_peak[0], ha && x->have_peak[1]);
    sites_text("live at the end, by site", x->live, x->n_live, limit);
    sites_text("live at the peak, by site", x->at_peak, x->n_at_peak, limit);
}

int od_cmd_diff(int argc, char **argv)
{
    static const struct option opts[] = {
        {"sites", required_argument, NULL, 's'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int json = 0, c;
    long limit = TEXT_SITES;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 's':
            if (od_cli_parse_int_opt("diff", "--sites", optarg, 0, 1000000, &limit))
                return OD_EXIT_USAGE;
            break;
        case 'j': json = 1; break;
        case 'h': usage(); return OD_EXIT_OK;
        case ':': return od_cli_usage_error("diff", "option '%s' needs a value", argv[optind - 1]);
        default: return od_cli_unknown_option("diff", "h", opts, argv);
        }
    }
    if (argc - optind != 2)
        return od_cli_usage_error("diff", "expected two snapshots: BEFORE AFTER");
    const char *path[2] = {argv[optind], argv[optind + 1]};
    if (strcmp(path[0], "-") == 0 && strcmp(path[1], "-") == 0)
        return od_cli_usage_error("diff", "only one of BEFORE and AFTER can be - (stdin)");
    od_snapshot *snap[2] = {NULL, NULL};
    od_summary *sum[2] = {NULL, NULL};
    od_snapdiff *d = NULL;
    od_error err;
    od_error_clear(&err);
    int rc = 0;
    for (int i = 0; i < 2 && !rc; i++) {
        snap[i] = od_cli_load_snapshot(path[i], &rc);
        if (snap[i] && od_summarize(snap[i], &sum[i], &err) != OD_OK)
            rc = od_cli_report_error(path[i], &err);
    }
    if (!rc && od_snapdiff_compute(sum[0], sum[1], &d, &err) != OD_OK)
        rc = od_cli_report_error(NULL, &err);
    if (!rc)
        od_snapdiff_settings(d, snap[0], snap[1]);
    if (!rc && json) {
        json_t *doc = json_object();
        json_object_set_new(doc, "schema_version", json_integer(1));
        json_object_set_new(doc, "before", od_cli_json_str(od_cli_input_name(path[0])));
        json_object_set_new(doc, "after", od_cli_json_str(od_cli_input_name(path[1])));
        json_object_set_new(doc, "allocator_settings", settings_json(d));
        json_t *arr = json_array();
        for (size_t i = 0; i < d->n_devices; i++)
            json_array_append_new(arr, device_json(&d->devices[i]));
        json_object_set_new(doc, "devices", arr);
        rc = od_cli_print_json(doc);
    } else if (!rc) {
        od_cli_color_init();
        printf("%s%s -> %s%s\n", od_c_bold, od_cli_input_shown(path[0]),
               od_cli_input_shown(path[1]), od_c_reset);
        /* A what-if of two settings: say which, the figures below are theirs. */
        if (d->settings_differ)
            printf("allocator settings: %s -> %s\n", d->settings[0][0] ? od_cli_esc(d->settings[0]) : "default",
                   d->settings[1][0] ? od_cli_esc(d->settings[1]) : "default");
        for (size_t i = 0; i < d->n_devices; i++)
            print_device(&d->devices[i], limit);
    }
    od_snapdiff_free(d);
    for (int i = 0; i < 2; i++) {
        od_summary_free(sum[i]);
        od_snapshot_free(snap[i]);
    }
    return rc;
}
