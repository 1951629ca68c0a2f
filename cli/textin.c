/* textin.c - whole-input reading and OOM report wording shared by several commands. */
#include "textin.h"


#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/advice.h"
#include "../lib/diagnose.h"
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
    od_cli_progress_input(in, path, "reading", od_cli_file_size(f));
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
    return od_oom_request_note(r);
}

void od_cli_oom_reason(const od_oom_report *r, char *buf, size_t size)
{
    /* Reports whose verdict comes from their wording have their reason in triage. */
    if (!od_triage_reason(r, buf, size))
        od_oom_reason(r, buf, size);
}

static json_t *opt_bytes(const od_oom_report *r, unsigned bit, uint64_t v)
{
    return (r->have & bit) ? json_integer((json_int_t)v) : json_null();
}

json_t *od_cli_oom_json(const od_oom_report *r)
{
    json_t *o = json_object();
    json_object_set_new(o, "framework", json_string(od_framework_name(r->framework)));
    json_object_set_new(o, "library", r->library[0] ? json_string(r->library) : json_null());
    json_object_set_new(o, "wording", json_string(od_oom_kind_name(r->kind)));
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
    if (r->kind == OD_KIND_VLLM_KV_LEN) {
        json_object_set_new(o, "max_model_len", json_integer((json_int_t)r->max_model_len));
        json_object_set_new(o, "kv_cache_tokens", json_integer((json_int_t)r->kv_cache_tokens));
    }
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
    const char *meaning = od_advice_meaning(r);
    json_object_set_new(v, "meaning", meaning ? json_string(meaning) : json_null());
    json_object_set_new(v, "size_bug", json_boolean(r->size_bug || r->size_corrupt));
    json_object_set_new(v, "near_full", json_boolean(r->near_full));
    json_object_set_new(o, "verdict", v);
    od_advice h[8];
    size_t nh = od_advice_for_report(r, h, 8);
    json_t *ha = json_array();
    for (size_t i = 0; i < nh; i++) {
        const od_advice_text *t = od_advice_get(h[i]);
        json_array_append_new(ha, json_pack("{s:s,s:s,s:o}", "action", t->action, "effect", t->effect, "command",
                                            t->command ? json_string(t->command) : json_null()));
    }
    json_object_set_new(o, "hints", ha);
    return o;
}
