/* main.c - `oomdoc`: global options and dispatch to the subcommands. */
#if defined(__linux__)
#include <malloc.h>
#endif
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "output.h"

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} command;

/* Subcommands whose file is not linked into this build have run == NULL (weak). */
static const command commands[] = {
    {"doctor", od_cmd_doctor, "diagnose an OOM from whatever you have: snapshot, log, step log, config"},
    {"triage", od_cmd_triage, "find and classify OOM messages in logs, memory_summary, nvidia-smi"},
    {"snapshot", od_cmd_snapshot, "summarize a torch.cuda.memory._dump_snapshot pickle"},
    {"replay", od_cmd_replay, "replay a snapshot's trace through the caching-allocator model: what-ifs"},
    {"plan", od_cmd_plan, "estimate training/inference memory from a config.json; max batch, mitigations"},
    {"trend", od_cmd_trend, "classify a per-step or NVML memory series: leak, stable, warming up, spike"},
    {"diff", od_cmd_diff, "compare two snapshots (before/after a fix, rank vs rank)"},
    {"report", od_cmd_report, "write a self-contained HTML report with plots"},
    {"profile", od_cmd_profile, "summarize PyTorch profiler and JAX memory records"},
    {"watch", od_cmd_watch, "sample live GPU memory through NVML, optionally around a command"},
    {"gpus", od_cmd_gpus, "list GPUs, their memory and the processes using it (NVML)"},
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static const command *find(const char *name)
{
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (commands[i].run && strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

static void usage(FILE *f)
{
    fprintf(f,
            "oomdoc %s - diagnose and prevent GPU out-of-memory failures\n\n"
            "Usage: oomdoc COMMAND [OPTIONS] [FILE...]\n"
            "       oomdoc help COMMAND | oomdoc COMMAND --help\n"
            "       oomdoc --version\n\nCommands:\n",
            OD_VERSION);
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (commands[i].run)
            fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].summary);
    fprintf(f,
            "\nExample:\n  oomdoc snapshot examples/snap_train_oom.pickle\n\n"
            "Sizes are IEC units (KiB, MiB, GiB) in text and plain bytes in --json.\n"
            "Colour only on a terminal; NO_COLOR disables it. Long work shows a progress line on\n"
            "a terminal's stderr; --quiet (any command) turns it off.\n\n" OD_EXIT_CODES_HELP
            "\nSee man oomdoc (man/oomdoc.1) for details.\n");
}

int main(int argc, char **argv)
{
#if defined(M_MMAP_THRESHOLD)
    /* Big arrays (a million trace entries) stay in their own mappings, so growing them
     * moves page tables (mremap) instead of copying; glibc's adaptive threshold would
     * otherwise pull them into the heap after the first large free. */
    mallopt(M_MMAP_THRESHOLD, 1 << 20);
#endif
    od_cli_stdout_init(); /* on a terminal, text is wrapped to its width (cli/output.h) */
    /* --quiet (or -q), before or after the command and before any "--": no progress line.
     * Taken out here so that every command accepts it. */
    int k = 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            while (i < argc)
                argv[k++] = argv[i++];
            break;
        }
        if (strcmp(argv[i], "--quiet") == 0 || (strcmp(argv[i], "-q") == 0 && i > 1)) {
            od_cli_quiet = 1;
            continue;
        }
        argv[k++] = argv[i];
    }
    argc = k;
    argv[argc] = NULL;
    if (argc < 2) {
        usage(stderr);
        return OD_EXIT_USAGE;
    }
    const char *arg = argv[1];
    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
        usage(stdout);
        return OD_EXIT_OK;
    }
    if (strcmp(arg, "--version") == 0 || strcmp(arg, "-V") == 0) {
        printf("oomdoc %s\n", OD_VERSION);
        return OD_EXIT_OK;
    }
    if (strcmp(arg, "help") == 0) {
        if (argc < 3) {
            usage(stdout);
            return OD_EXIT_OK;
        }
        const command *c = find(argv[2]);
        if (!c)
            return od_cli_usage_error(NULL, "unknown command '%s'", argv[2]);
        char *sub[] = {argv[2], "--help", NULL};
        return c->run(2, sub);
    }
    const command *c = find(arg);
    if (!c)
        return od_cli_usage_error(NULL, "unknown command '%s'", arg);
    od_cli_color_init();
    return c->run(argc - 1, argv + 1);
}
