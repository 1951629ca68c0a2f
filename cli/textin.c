/* textin.c - whole-input reading and OOM report wording shared by several commands. */
#include "textin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/input.h"
#include "../lib/units.h"
#include "output.h"

char *od_cli_read_all(const char *path, size_t *len, int *exit_code)
{
    FILE *f = od_cli_open(path, exit_code);
    if (!f)
        return NULL;
    od_error err;
    od_error_clear(&err);
    od_input *in = NULL;
    if (od_input_open_file(f, &in, &err) != OD_OK) {
        *exit_code = od_cli_report_error(path, &err);
        od_cli_close(f);
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    for (;;) {
        if (!buf) {
            fprintf(stderr, "oomdoc: %s: out of memory\n", path);
            *exit_code = OD_EXIT_INTERNAL;
            break;
        }
        if (n == cap) {
            if (cap >= OD_CLI_MAX_TEXT) {
                od_fail_at(&err, OD_ERR_LIMIT, n, "input larger than %llu bytes: not a log or series",
                           (unsigned long long)OD_CLI_MAX_TEXT);
                *exit_code = od_cli_report_error(path, &err);
                free(buf);
                buf = NULL;
                break;
            }
            char *nb = realloc(buf, cap * 2 + 1);
            if (!nb) {
                free(buf);
                buf = NULL;
                continue;
            }
            buf = nb;
            cap *= 2;
        }
        size_t got = od_input_read(in, buf + n, cap - n);
        if (got == 0) {
            if (od_input_error(in, &err) != OD_OK) {
                *exit_code = od_cli_report_error(path, &err);
                free(buf);
                buf = NULL;
            }
            break;
        }
        n += got;
    }
    od_input_close(in);
    od_cli_close(f);
    if (buf) {
        buf[n] = '\0';
        *len = n;
    }
    return buf;
}

const char *od_cli_request_note(const od_oom_report *r)
{
    if (!r->request_is_segment)
        return NULL;
    if (r->requested_bytes == 2ULL << 20 || r->requested_bytes == 20ULL << 20)
        return "the allocator's segment size: the tensor may be much smaller (requests up to 1 MiB "
               "take a 2 MiB segment, up to 10 MiB a 20 MiB one)";
    return "the allocator's block size (the request rounded up), not the tensor's exact size";
}

void od_cli_oom_reason(const od_oom_report *r, char *buf, size_t size)
{
    char a[32], b[32], c[32], d[32], e[32], f[32];
    uint64_t ru = (r->have & OD_HAVE_RESERVED_UNALLOC) ? r->reserved_unallocated_bytes : 0;
    const char *lim = (r->have & OD_HAVE_ALLOWED) ? "the cap" : "capacity";
    switch (r->verdict) {
    case OD_OOM_UNKNOWN:
        if (!(r->have & OD_HAVE_REQUESTED))
            snprintf(buf, size, "the message does not say how much was requested");
        else
            snprintf(buf, size, "the message gives no pool figures (%s), so the cause cannot be told from it",
                     !(r->have & OD_HAVE_ALLOCATED) ? "allocated memory" : "capacity or cap");
        return;
    case OD_OOM_FRAGMENTATION:
        snprintf(buf, size,
                 "%s requested <= %s reserved-unallocated + %s headroom under %s = %s: the memory "
                 "existed, but no free block was large enough",
                 od_format_iec(r->requested_bytes, a, sizeof a), od_format_iec(ru, b, sizeof b),
                 od_format_iec(r->headroom_bytes, c, sizeof c), lim,
                 od_format_iec(r->available_bytes, d, sizeof d));
        return;
    case OD_OOM_CAP_LIMIT:
        if (r->framework == OD_FW_PYTORCH_MPS)
            snprintf(buf, size,
                     "the MPS high-watermark cap (max allowed %s) was reached: %s requested, only %s "
                     "left under it",
                     od_format_iec(r->allowed_bytes, a, sizeof a), od_format_iec(r->requested_bytes, b, sizeof b),
                     od_format_iec(r->available_bytes, c, sizeof c));
        else if (r->have & OD_HAVE_FREE)
            snprintf(buf, size,
                     "the per-process cap (%s allowed) was reached: %s requested, %s available under "
                     "the cap, while the device still had %s free",
                     od_format_iec(r->allowed_bytes, a, sizeof a), od_format_iec(r->requested_bytes, b, sizeof b),
                     od_format_iec(r->available_bytes, c, sizeof c), od_format_iec(r->free_bytes, d, sizeof d));
        else
            snprintf(buf, size, "the per-process cap (%s allowed) was reached: %s requested, %s available under it",
                     od_format_iec(r->allowed_bytes, a, sizeof a), od_format_iec(r->requested_bytes, b, sizeof b),
                     od_format_iec(r->available_bytes, c, sizeof c));
        return;
    case OD_OOM_OTHER_PROCESSES:
        snprintf(buf, size,
                 "%s requested > %s available (%s reserved-unallocated + %s headroom): %s missing, and "
                 "other processes hold %s",
                 od_format_iec(r->requested_bytes, a, sizeof a), od_format_iec(r->available_bytes, b, sizeof b),
                 od_format_iec(ru, c, sizeof c), od_format_iec(r->headroom_bytes, d, sizeof d),
                 od_format_iec(r->missing_bytes, e, sizeof e),
                 od_format_iec(r->others_bytes, f, sizeof f));
        return;
    case OD_OOM_CAPACITY: {
        char o[64] = "no other process is reported";
        if (r->n_other)
            snprintf(o, sizeof o, "other processes hold only %s", od_format_iec(r->others_bytes, e, sizeof e));
        char m[32];
        snprintf(buf, size,
                 "%s requested > %s available (%s reserved-unallocated + %s headroom under %s): %s "
                 "missing; %s",
                 od_format_iec(r->requested_bytes, a, sizeof a), od_format_iec(r->available_bytes, b, sizeof b),
                 od_format_iec(ru, c, sizeof c), od_format_iec(r->headroom_bytes, d, sizeof d), lim,
                 od_format_iec(r->missing_bytes, m, sizeof m), o);
        return;
    }
    }
    snprintf(buf, size, "?");
}

static json_t *opt_bytes(const od_oom_report *r, unsigned bit, uint64_t v)
{
    return (r->have & bit) ? json_integer((json_int_t)v) : json_null();
}

json_t *od_cli_oom_json(const od_oom_report *r)
{
    json_t *o = json_object();
    json_object_set_new(o, "framework", json_string(od_framework_name(r->framework)));
    json_object_set_new(o, "line", json_integer((json_int_t)r->line));
    json_object_set_new(o, "byte_offset", json_integer((json_int_t)r->offset));
    json_object_set_new(o, "device", (r->have & OD_HAVE_DEVICE) ? json_integer(r->device) : json_null());
    json_object_set_new(o, "occurrences", json_integer(r->occurrences));
    json_object_set_new(o, "requested_bytes", opt_bytes(r, OD_HAVE_REQUESTED, r->requested_bytes));
    json_object_set_new(o, "capacity_bytes", opt_bytes(r, OD_HAVE_CAPACITY, r->capacity_bytes));
    json_object_set_new(o, "free_bytes", opt_bytes(r, OD_HAVE_FREE, r->free_bytes));
    json_object_set_new(o, "allowed_bytes", opt_bytes(r, OD_HAVE_ALLOWED, r->allowed_bytes));
    json_object_set_new(o, "allocated_bytes", opt_bytes(r, OD_HAVE_ALLOCATED, r->allocated_bytes));
    json_object_set_new(o, "reserved_unallocated_bytes",
                        opt_bytes(r, OD_HAVE_RESERVED_UNALLOC, r->reserved_unallocated_bytes));
    json_object_set_new(o, "process_bytes", opt_bytes(r, OD_HAVE_PROCESS, r->process_bytes));
    json_t *others = json_array();
    for (size_t i = 0; i < r->n_other; i++) {
        json_t *p = json_object();
        json_object_set_new(p, "pid", json_integer((json_int_t)r->other[i].pid));
        json_object_set_new(p, "bytes", json_integer((json_int_t)r->other[i].bytes));
        json_array_append_new(others, p);
    }
    json_object_set_new(o, "other_processes", others);
    json_object_set_new(o, "figures_rounded", json_boolean(r->rounded));
    json_object_set_new(o, "requested_is_segment_size", json_boolean(r->request_is_segment));
    if (r->dtype[0])
        json_object_set_new(o, "dtype", json_string(r->dtype));
    json_t *v = json_object();
    char reason[512];
    od_cli_oom_reason(r, reason, sizeof reason);
    json_object_set_new(v, "name", json_string(od_oom_verdict_name(r->verdict)));
    json_object_set_new(v, "headroom_bytes", r->have_headroom ? json_integer((json_int_t)r->headroom_bytes) : json_null());
    json_object_set_new(v, "available_bytes", r->have_headroom ? json_integer((json_int_t)r->available_bytes) : json_null());
    json_object_set_new(v, "missing_bytes", r->have_headroom ? json_integer((json_int_t)r->missing_bytes) : json_null());
    json_object_set_new(v, "other_processes_bytes", json_integer((json_int_t)r->others_bytes));
    json_object_set_new(v, "reason", json_string(reason));
    json_object_set_new(o, "verdict", v);
    const char *h[8];
    size_t nh = od_triage_hints(r, h, 8);
    json_t *ha = json_array();
    for (size_t i = 0; i < nh; i++)
        json_array_append_new(ha, json_string(h[i]));
    json_object_set_new(o, "hints", ha);
    return o;
}
