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

#include "../lib/report.h"
#include "../lib/units.h"
#include "commands.h"
#include "output.h"
#include "textin.h"

static void usage(void)
{
    printf("Usage: oomdoc report FILE... [-o report.html] [--timestamp] [--capacity SIZE]\n"
           "                            [--points N] [--top N]\n\n"
           "Write one self-contained HTML page (inline SVG and CSS; no script, no external URL,\n"
           "readable offline, printed and in dark mode) showing what memory did:\n"
           "  snapshots   live memory over trace time stacked by the top sites, reserved\n"
           "              memory, the peak and OOM events marked; live memory per iteration\n"
           "              (Optimizer.step boundaries); the segment map by block state at the\n"
           "              end (fragmentation); live bytes by site at the peak and at the end\n"
           "  step logs   CSV / JSON Lines per-step logs and NVML series with their trend\n"
           "  logs        the OOM messages found in them, with triage's verdict\n"
           "Each input's kind is detected from its content; gzip is read transparently.\n"
           "Long traces are drawn as at most N points per plot (each the highest moment of\n"
           "its interval), so pages stay small and open instantly.\n\n"
           "Options:\n"
           "  -o, --output FILE  write the page to FILE (default: stdout)\n"
           "  --timestamp        show when the page was made (UTC); off by default so the\n"
           "                     same inputs give the same bytes\n"
           "  --capacity SIZE    device memory for trend projections (e.g. 80GiB)\n"
           "  --points N         points per timeline (default 2000, 2..100000)\n"
           "  --top N            sites stacked and listed (default 6, at most 8)\n"
           "  -h, --help         this help\n\n"
           "Example:\n"
           "  oomdoc report tests/data/snapshots/frag_default.pickle -o report.html\n"
           "  oomdoc report tests/data/snapshots/leak_eval_no_grad.pickle \\\n"
           "      tests/data/extracted/leak_eval_no_grad_steps.csv -o leak.html\n\n" OD_EXIT_CODES_HELP);
}

typedef struct {
    char *text;
    size_t len;
    od_snapshot *snap;
    od_series *series;
    od_triage *tri;
} loaded;

/* Load path into *l and describe it in *item. Returns 0 or an exit code (error printed). */
static int load(const char *path, loaded *l, od_report_item *item)
{
    int code = 0;
    od_error err;
    od_error_clear(&err);
    l->text = od_cli_read_all(path, &l->len, &code);
    if (!l->text)
        return code;
    item->name = path;
    /* Protocol 2+ pickles start with PROTO (0x80): torch writes protocol 4. */
    if (l->len && (unsigned char)l->text[0] == 0x80) {
        od_input *in = NULL;
        od_status st = od_input_open_memory(l->text, l->len, &in, &err);
        if (st == OD_OK)
            st = od_snapshot_load(in, &l->snap, &err);
        od_input_close(in);
        if (st != OD_OK)
            return od_cli_report_error(path, &err);
        item->kind = OD_REPORT_SNAPSHOT;
        item->snapshot = l->snap;
        return 0;
    }
    if (od_series_parse(l->text, l->len, &l->series, &err) == OD_OK) {
        item->kind = OD_REPORT_SERIES;
        item->series = l->series;
        return 0;
    }
    l->series = NULL;
    od_error_clear(&err);
    if (od_triage_parse(l->text, l->len, &l->tri, &err) != OD_OK)
        return od_cli_report_error(path, &err);
    if (!l->tri->n_reports) {
        od_fail_at(&err, OD_ERR_FORMAT, 0,
                   "not a snapshot (pickle), a step log (CSV/JSON Lines with a step or time column) "
                   "or a log with an OOM message");
        return od_cli_report_error(path, &err);
    }
    item->kind = OD_REPORT_TRIAGE;
    item->triage = l->tri;
    return 0;
}

static void unload(loaded *l)
{
    od_snapshot_free(l->snap);
    od_series_free(l->series);
    od_triage_free(l->tri);
    free(l->text);
}

int od_cmd_report(int argc, char **argv)
{
    static const struct option opts[] = {
        {"output", required_argument, NULL, 'o'},
        {"timestamp", no_argument, NULL, 'T'},
        {"capacity", required_argument, NULL, 'c'},
        {"points", required_argument, NULL, 'p'},
        {"top", required_argument, NULL, 't'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *output = NULL;
    int stamp = 0, c;
    long points = OD_REPORT_DEFAULT_POINTS, top = OD_REPORT_DEFAULT_SITES;
    uint64_t capacity = 0;
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
        case 'h': usage(); return OD_EXIT_OK;
        default:
            if (optopt == 'o')
                return od_cli_usage_error("report", "option '-o' needs a FILE");
            return od_cli_usage_error("report", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return od_cli_usage_error("report", "missing FILE");
    size_t n = (size_t)(argc - optind);
    loaded *ls = calloc(n, sizeof *ls);
    od_report_item *items = calloc(n, sizeof *items);
    int code = 0;
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
    /* Hooks: in.diagnosis (doctor), in.plan (plan) and items[i].replay_reserved (replay)
     * are filled here once those modules are part of the build. */

    FILE *out = stdout;
    if (output && strcmp(output, "-") != 0) {
        out = fopen(output, "w");
        if (!out) {
            od_error err;
            od_fail(&err, OD_ERR_IO, "cannot write: %s", strerror(errno));
            code = od_cli_report_error(output, &err);
            goto out;
        }
    }
    od_error err;
    od_error_clear(&err);
    od_status st = od_report_write(&in, out, &err);
    if (out != stdout && fclose(out) != 0 && st == OD_OK)
        st = od_fail(&err, OD_ERR_IO, "writing the report failed");
    if (st != OD_OK)
        code = od_cli_report_error(output ? output : "report", &err);
out:
    for (size_t i = 0; i < n; i++)
        unload(&ls[i]);
    free(ls);
    free(items);
    return code;
}
