/* diagflags.c - the flags doctor and report share (see diagflags.h). */
#include "diagflags.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/torchver.h"
#include "model/gpus.h"
#include "output.h"

void od_cli_diagflags_init(od_cli_diagflags *f)
{
    memset(f, 0, sizeof *f);
    od_workload_defaults(&f->w);
}

static int parse_fail_on(const char *cmd, const char *list, int *fail_on)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int v = od_verdict_parse(tok);
        if (v < 0)
            return od_cli_usage_error(cmd,
                                      "--fail-on: '%s' is not a verdict (capacity, fragmentation, leak, "
                                      "other_processes, cap_limit, host_memory, healthy, unknown)", tok);
        fail_on[v] = 1;
    }
    return 0;
}

int od_cli_diagflag(const char *cmd, int opt, const char *arg, od_cli_diagflags *f)
{
    switch (opt) {
    case OD_DFLAG_FAIL_ON: return parse_fail_on(cmd, arg, f->fail_on) ? OD_EXIT_USAGE : 0;
    case OD_DFLAG_CONFIG: f->config = arg; return 0;
    case OD_DFLAG_CAPACITY: return od_cli_parse_size_opt(cmd, "--capacity", arg, &f->capacity_bytes) ? OD_EXIT_USAGE : 0;
    case OD_DFLAG_TOTAL: return od_cli_parse_size_opt(cmd, "--device-total", arg, &f->total_bytes) ? OD_EXIT_USAGE : 0;
    case OD_DFLAG_MEMORY: return od_cli_parse_size_opt(cmd, "--memory", arg, &f->total_bytes) ? OD_EXIT_USAGE : 0;
    case OD_DFLAG_FRACTION: {
        char *end = NULL;
        f->fraction = strtod(arg, &end);
        if (!end || *end || !(f->fraction > 0 && f->fraction <= 1))
            return od_cli_usage_error(cmd, "--fraction: '%s' is not a number in (0, 1]", arg);
        return 0;
    }
    case OD_DFLAG_GPU: f->gpu_name = arg; return 0;
    case OD_DFLAG_TORCH: {
        od_torch_version tv;
        if (od_torch_version_parse(arg, &tv) != OD_OK)
            return od_cli_usage_error(cmd, "--torch-version: '%s' is not a version like 2.1.0", arg);
        f->torch_version = arg;
        return 0;
    }
    default: {
        /* plan's workload flags (planflags.h), every one of them */
        int r = od_cli_workload_flag(cmd, opt, arg, &f->w);
        if (r == 0) {
            f->plan_flags = 1;
            f->task_given |= opt == OD_FLAG_TASK;
            f->new_tokens_given |= opt == OD_FLAG_NEW;
        }
        return r;
    }
    }
}

int od_cli_diagflags_finish(const char *cmd, od_cli_diagflags *f)
{
    if (f->gpu_name) {
        od_gpu g;
        od_error ge;
        if (od_gpu_lookup(f->gpu_name, &g, &ge) != OD_OK)
            return od_cli_usage_error(cmd, "--gpu: %s", ge.msg);
        if (!f->total_bytes)
            f->total_bytes = g.memory_bytes;
        f->w.workspace_bytes = g.workspace_bytes;
    }
    if (f->fraction > 0) {
        if (!f->total_bytes)
            return od_cli_usage_error(cmd, "--fraction needs the device's memory (--gpu NAME or --device-total SIZE)");
        if (!f->capacity_bytes)
            f->capacity_bytes = (uint64_t)floor(f->fraction * (double)f->total_bytes);
    }
    return 0;
}

void od_cli_diag_request(const od_cli_diagflags *f, size_t config_input, od_diag_request *rq)
{
    memset(rq, 0, sizeof *rq);
    rq->opts.cap_bytes = f->capacity_bytes;
    rq->opts.device_total_bytes = f->total_bytes;
    rq->opts.torch_version = f->torch_version;
    rq->opts.task_given = f->task_given;
    rq->opts.new_tokens_given = f->new_tokens_given;
    rq->workload = &f->w;
    rq->plan_flags = f->plan_flags;
    rq->config_input = config_input;
}

int od_cli_diagnose(const char *cmd, const od_loaded *ins, size_t n, const od_cli_diagflags *f, od_diagnosis **out)
{
    od_diag_request rq;
    od_cli_diag_request(f, f->config ? n - 1 : OD_NO_INPUT, &rq);
    size_t bad = OD_NO_INPUT;
    od_error err;
    od_error_clear(&err);
    od_status st = od_diagnose_loaded(ins, n, &rq, out, &bad, &err);
    if (st == OD_OK)
        return 0;
    if (st == OD_ERR_ARG)
        return od_cli_usage_error(cmd, "%s", err.msg);
    return od_cli_report_error(bad != OD_NO_INPUT ? ins[bad].name : NULL, &err);
}
