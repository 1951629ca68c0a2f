/* cmd_doctor.c - `oomdoc doctor FILE... [--fail-on VERDICT,...] [--json]`: one diagnosis
 * from whatever the user has: an OOM log, a per-step memory log, an NVML series,
 * memory_summary()/memory_stats() output, nvidia-smi output, memory snapshots.
 *
 * The inputs are read by the library's loader (read/load.h), diagnosed once
 * (od_diagnose_loaded) and written as the diagnosis document (render/doctor_doc.h): --json
 * prints it, the text is printed from it (render/doctor_text.h), and `oomdoc report`
 * embeds the same document for the same inputs and flags (diagflags.h). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "diagflags.h"
#include "inputs.h"
#include "output.h"
#include "render/doctor_doc.h"
#include "render/doctor_text.h"
#include "render/report.h"

static void usage(void)
{
    printf("Usage: oomdoc doctor FILE... [--config config.json [plan flags]] [--fail-on VERDICT,...] [--json]\n"
           "                     [--html report.html]\n\n"
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
           OD_DIAG_OPTIONS_HELP
           "  --html FILE     also write the report page of the same diagnosis to FILE (as\n"
           "                  oomdoc report writes it for the same inputs and flags)\n"
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

int od_cmd_doctor(int argc, char **argv)
{
    static const struct option opts[] = {
        OD_DIAG_OPTIONS,
        {"json", no_argument, NULL, 'j'},
        {"html", required_argument, NULL, 'H'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int json = 0, c;
    const char *html = NULL;
    od_cli_diagflags fl;
    od_cli_diagflags_init(&fl);
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'j': json = 1; break;
        case 'H': html = optarg; break;
        case 'h': usage(); return OD_EXIT_OK;
        case ':': return od_cli_usage_error("doctor", "option '%s' needs a value", argv[optind - 1]);
        default: {
            int r = od_cli_diagflag("doctor", c, optarg, &fl);
            if (r < 0)
                return od_cli_unknown_option("doctor", "h", opts, argv);
            if (r)
                return r;
            break;
        }
        }
    }
    size_t n_files = (size_t)(argc - optind);
    if (n_files == 0)
        return od_cli_usage_error("doctor", "expected at least one FILE");
    if (od_cli_diagflags_finish("doctor", &fl))
        return OD_EXIT_USAGE;
    return od_cli_diagnose_and_print("doctor", argv + optind, n_files, &fl, json, html);
}

int od_cli_diagnose_and_print(const char *cmd, char **files, size_t n_files, const od_cli_diagflags *fl, int json,
                              const char *html)
{
    size_t n = n_files + (fl->config != NULL);
    char **paths = calloc(n, sizeof *paths);
    if (!paths)
        return OD_EXIT_INTERNAL;
    memcpy(paths, files, n_files * sizeof *paths);
    if (fl->config)
        paths[n_files] = (char *)fl->config;
    od_loaded *ins = NULL;
    int rc = od_cli_load_inputs(paths, n, &ins);
    od_diagnosis *d = NULL;
    if (!rc)
        rc = od_cli_diagnose(cmd, ins, n, fl, &d);
    if (!rc) {
        json_t *doc = od_diagnosis_document(d, ins, n);
        /* the report page of the same diagnosis, when asked (one run for every view) */
        od_cli_page_opts po = {0, OD_REPORT_DEFAULT_POINTS, OD_REPORT_DEFAULT_SITES};
        if (doc && html && (rc = od_cli_write_page(cmd, fl, ins, n, d, doc, &po, html)) != 0) {
            json_decref(doc);
            doc = NULL;
        } else if (!doc) {
            fprintf(stderr, "oomdoc: %s: out of memory\n", cmd);
            rc = OD_EXIT_INTERNAL;
        } else if (json) {
            rc = od_cli_print_json(doc);
        } else {
            od_cli_color_init();
            od_text_style st = {od_c_bold, od_c_red, od_c_green, od_c_yellow, od_c_reset, od_cli_cwd()};
            od_error err;
            if (od_diagnosis_print(doc, stdout, &st, &err) != OD_OK)
                rc = od_cli_report_error(NULL, &err);
            json_decref(doc);
        }
        int all_nothing = 1;
        for (size_t i = 0; i < n; i++)
            all_nothing &= ins[i].kind == OD_INPUT_NOTHING;
        if (!rc && (fl->fail_on[d->verdict] || all_nothing))
            rc = OD_EXIT_NOTHING;
    }
    od_diagnosis_free(d);
    od_cli_inputs_free(ins, n);
    free(paths);
    return rc;
}
