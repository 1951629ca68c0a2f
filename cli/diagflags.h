/* diagflags.h - the flags of a diagnosis, shared by `doctor` and `report` (report takes
 * every doctor flag, so the two give one diagnosis for the same inputs and flags): the
 * cap (--capacity, --fraction), the device (--gpu, --device-total, --memory), the torch
 * release (--torch-version), --fail-on, the model (--config) and the workload (plan's
 * flags, with --task infer --prompt --new-tokens --kv-cache for a generate run). */
#ifndef OD_CLI_DIAGFLAGS_H
#define OD_CLI_DIAGFLAGS_H

#include <getopt.h>
#include <jansson.h>

#include "analyze/diagnose.h"
#include "planflags.h"

enum { OD_DFLAG_FAIL_ON = 0x2000, OD_DFLAG_CONFIG, OD_DFLAG_CAPACITY, OD_DFLAG_FRACTION, OD_DFLAG_TOTAL,
       OD_DFLAG_MEMORY, OD_DFLAG_GPU, OD_DFLAG_TORCH };

#define OD_DIAG_OPTIONS                                                         \
    {"fail-on", required_argument, NULL, OD_DFLAG_FAIL_ON},                     \
    {"config", required_argument, NULL, OD_DFLAG_CONFIG},                       \
    {"capacity", required_argument, NULL, OD_DFLAG_CAPACITY},                   \
    {"fraction", required_argument, NULL, OD_DFLAG_FRACTION},                   \
    {"device-total", required_argument, NULL, OD_DFLAG_TOTAL},                  \
    {"memory", required_argument, NULL, OD_DFLAG_MEMORY},                       \
    {"gpu", required_argument, NULL, OD_DFLAG_GPU},                             \
    {"torch-version", required_argument, NULL, OD_DFLAG_TORCH},                 \
    OD_WORKLOAD_OPTIONS

/* The usage lines of these flags, for both commands' --help. */
#define OD_DIAG_OPTIONS_HELP                                                                              \
    "  --fail-on LIST  exit 1 when the verdict is in LIST (comma-separated), for CI\n"                    \
    "  --capacity SIZE the run's per-process cap (as oomdoc replay takes it)\n"                           \
    "  --fraction F    the cap as set_per_process_memory_fraction(F) (needs the device)\n"                \
    "  --gpu NAME      the device (its memory, from oomdoc plan's table)\n"                               \
    "  --device-total SIZE  the device's memory as torch reports it (also --memory)\n"                    \
    "  --torch-version V  the job's torch (else inferred from the OOM message's wording\n"                \
    "                  or the snapshot's layout): no advice names what it lacks\n"                        \
    "  --config FILE   the model's config.json: the plan is compared with snapshots and\n"                \
    "                  sizes the advice (full-step cap, largest batch, recipe changes)\n"                 \
    "  --batch N       plan: micro-batch per GPU (default 1)\n"                                           \
    "  --seq N         plan: sequence length (default 1024)\n"                                            \
    "  --precision P   plan: fp32, amp-bf16 (default), amp-fp16, bf16\n"                                  \
    "  --optimizer O   plan: adamw (default), adamw-fused, sgd, sgd-nomom, adafactor, adam8bit\n"         \
    "  --attention A   plan: sdpa (default), eager, flash\n"                                              \
    "  --checkpointing C  plan: none (default), full, selective\n"                                        \
    "  --task T        plan: train, or infer (a generate() trace is compared with an\n"                   \
    "                  inference plan without it)\n"                                                      \
    "  --prompt N --new-tokens N --kv-cache K  plan, inference: prompt and generated\n"                   \
    "                  tokens (default 512, 128; a trace's decode steps when seen), the\n"                \
    "                  cache: none, dynamic (default), static, paged\n"                                  \
    "  ...             every other workload flag of oomdoc plan (--zero, --dp, --tp, --pp,\n"              \
    "                  --framework, --lora-rank, --grad-accum, ...: see oomdoc plan --help)\n"

typedef struct {
    int fail_on[OD_VERDICT_COUNT];
    const char *config;         /* --config FILE, or NULL */
    const char *gpu_name;       /* --gpu NAME, or NULL */
    uint64_t capacity_bytes;    /* --capacity (or --fraction's share, once finished) */
    double fraction;            /* --fraction, 0 = not given */
    uint64_t total_bytes;       /* --device-total / --memory (or --gpu's, once finished) */
    const char *torch_version;  /* --torch-version, or NULL */
    od_workload w;              /* the plan flags over plan's defaults */
    int plan_flags;             /* a plan flag was given */
    int task_given, new_tokens_given;
} od_cli_diagflags;

void od_cli_diagflags_init(od_cli_diagflags *f);

/* If opt is one of the codes above, parse arg into f and return 0 (or print a usage error
 * naming cmd and return OD_EXIT_USAGE); return -1 for any other option. */
int od_cli_diagflag(const char *cmd, int opt, const char *arg, od_cli_diagflags *f);

/* After the last flag: --gpu's memory as the device total, --fraction's cap from it.
 * Returns 0 or OD_EXIT_USAGE (error printed). */
int od_cli_diagflags_finish(const char *cmd, od_cli_diagflags *f);

/* The request for od_diagnose_loaded; config_input: the index of the --config input in the
 * loaded inputs, OD_NO_INPUT when none. rq points into f: keep f while rq is used. */
void od_cli_diag_request(const od_cli_diagflags *f, size_t config_input, od_diag_request *rq);

/* Diagnose the loaded inputs (the --config one last, when f has one) under f. Returns 0
 * with *out set (free with od_diagnosis_free), or an exit code after printing the error:
 * a usage error naming cmd, or a file's error naming it. */
int od_cli_diagnose(const char *cmd, const od_loaded *ins, size_t n, const od_cli_diagflags *f, od_diagnosis **out);

/* doctor: load files (and f's --config), diagnose, print the document (--json) or its text,
 * and write the report page of the same diagnosis to html when it is not NULL. Returns the
 * exit code (1 for a --fail-on verdict or inputs with nothing recognized). */
int od_cli_diagnose_and_print(const char *cmd, char **files, size_t n_files, const od_cli_diagflags *f, int json,
                              const char *html);

/* What the page shows beyond the diagnosis (report's flags). */
typedef struct {
    int timestamp;   /* --timestamp */
    size_t points;   /* --points */
    size_t top;      /* --top */
} od_cli_page_opts;

/* Write the report page of loaded inputs ins[0..n) and their diagnosis d (doc its
 * document) to output (NULL or "-": stdout), written safely beside the target. The
 * inputs nothing is drawn for (a config: the Plan section's; an unrecognized one) are
 * left out. Returns 0 or an exit code (error printed). */
int od_cli_write_page(const char *cmd, const od_cli_diagflags *f, const od_loaded *ins, size_t n,
                      const od_diagnosis *d, const json_t *doc, const od_cli_page_opts *po, const char *output);

#endif
