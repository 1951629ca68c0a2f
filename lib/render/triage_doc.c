/* triage_doc.c - the triage --json document (triage_doc.h). */
#include "render/triage_doc.h"

#include "render/jsonstr.h"

#include <stdio.h>
#include <string.h>

#include "analyze/advice.h"
#include "analyze/diagnose.h"

void od_triage_report_reason(const od_oom_report *r, char *buf, size_t size)
{
    /* Reports whose verdict comes from their wording have their reason in triage. */
    if (!od_triage_reason(r, buf, size))
        od_oom_reason(r, buf, size);
}

static json_t *opt_bytes(const od_oom_report *r, unsigned bit, uint64_t v)
{
    return (r->have & bit) ? json_integer((json_int_t)v) : json_null();
}

json_t *od_triage_report_json(const od_oom_report *r)
{
    json_t *o = json_object();
    json_object_set_new(o, "framework", od_json_string(od_framework_name(r->framework)));
    json_object_set_new(o, "library", r->library[0] ? od_json_string(r->library) : json_null());
    json_object_set_new(o, "wording", od_json_string(od_oom_kind_name(r->kind)));
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
    json_object_set_new(o, "program_bytes", r->program_bytes ? json_integer((json_int_t)r->program_bytes) : json_null());
    json_object_set_new(o, "figures_rounded", json_boolean(r->rounded));
    json_object_set_new(o, "requested_is_segment_size", json_boolean(r->request_is_segment));
    if (r->dtype[0]) {
        json_object_set_new(o, "dtype", od_json_string(r->dtype));
        json_object_set_new(o, "dtype_from_op", json_boolean(r->dtype_from_op));
    }
    json_t *v = json_object();
    char reason[512];
    od_triage_report_reason(r, reason, sizeof reason);
    json_object_set_new(v, "name", od_json_string(od_oom_verdict_name(r->verdict)));
    json_object_set_new(v, "headroom_bytes", r->have_headroom ? json_integer((json_int_t)r->headroom_bytes) : json_null());
    json_object_set_new(v, "available_bytes", r->have_headroom ? json_integer((json_int_t)r->available_bytes) : json_null());
    json_object_set_new(v, "missing_bytes", r->have_headroom ? json_integer((json_int_t)r->missing_bytes) : json_null());
    json_object_set_new(v, "other_processes_bytes", json_integer((json_int_t)r->others_bytes));
    json_object_set_new(v, "reason", od_json_string(reason));
    const char *meaning = od_advice_meaning(r);
    json_object_set_new(v, "meaning", meaning ? od_json_string(meaning) : json_null());
    json_object_set_new(v, "size_bug", json_boolean(r->size_bug || r->size_corrupt));
    json_object_set_new(v, "near_full", json_boolean(r->near_full));
    json_object_set_new(v, "cache_too_small", json_boolean(r->stranded_small));
    json_object_set_new(v, "free_exceeds_request", json_boolean(r->free_exceeds_request));
    json_object_set_new(v, "held_elsewhere_bytes",
                        r->have_headroom ? json_integer((json_int_t)r->held_elsewhere_bytes) : json_null());
    json_object_set_new(v, "other_ranks_contexts", json_boolean(r->stray_contexts));
    json_object_set_new(o, "verdict", v);
    if (r->have_torch_range) {
        char lo[32], hi[32];
        const od_torch_range *g = &r->torch_range;
        json_object_set_new(o, "torch_versions",
                            json_pack("{s:o,s:o,s:s,s:o}", "from",
                                      od_torch_version_known(g->lower)
                                          ? od_json_string(od_torch_version_format(g->lower, lo, sizeof lo))
                                          : json_null(),
                                      "to",
                                      od_torch_version_known(g->upper)
                                          ? od_json_string(od_torch_version_format(g->upper, hi, sizeof hi))
                                          : json_null(),
                                      "why", g->why, "refined",
                                      g->refined ? od_json_string(g->refined) : json_null()));
    } else {
        json_object_set_new(o, "torch_versions", json_null());
    }
    od_hint h[8];
    size_t nh = od_advice_hints(r, h, 8);
    json_t *ha = json_array();
    for (size_t i = 0; i < nh; i++) {
        const od_advice_text *t = od_advice_get(h[i].id);
        json_array_append_new(ha, json_pack("{s:s,s:s,s:o,s:b,s:b}", "action", h[i].action, "effect", t->effect,
                                            "command", h[i].command ? od_json_string(h[i].command) : json_null(),
                                            "needs_upgrade", h[i].upgrade, "alternative", h[i].alternative));
    }
    json_object_set_new(o, "hints", ha);
    return o;
}

json_t *od_triage_document(const od_triage *t, const char *input)
{
    json_t *doc = json_object();
    json_object_set_new(doc, "schema_version", json_integer(1));
    json_object_set_new(doc, "input", od_json_string(input));
    json_t *reps = json_array();
    for (size_t i = 0; i < t->n_reports; i++)
        json_array_append_new(reps, od_triage_report_json(&t->reports[i]));
    json_object_set_new(doc, "reports", reps);
    json_t *sums = json_array();
    for (size_t i = 0; i < t->n_summaries; i++) {
        const od_mem_summary *m = &t->summaries[i];
        json_t *o = json_object();
        json_object_set_new(o, "line", json_integer((json_int_t)m->line));
        json_object_set_new(o, "device", json_integer(m->device));
        json_object_set_new(o, "allocated_bytes", json_integer((json_int_t)m->allocated_bytes));
        json_object_set_new(o, "allocated_peak_bytes", json_integer((json_int_t)m->allocated_peak_bytes));
        json_object_set_new(o, "reserved_bytes", json_integer((json_int_t)m->reserved_bytes));
        json_object_set_new(o, "reserved_peak_bytes", json_integer((json_int_t)m->reserved_peak_bytes));
        json_object_set_new(o, "non_releasable_bytes", m->have_non_releasable
                                                           ? json_integer((json_int_t)m->non_releasable_bytes)
                                                           : json_null());
        json_object_set_new(o, "ooms", m->have_counts ? json_integer((json_int_t)m->ooms) : json_null());
        json_object_set_new(o, "cuda_malloc_retries", m->have_counts ? json_integer((json_int_t)m->retries) : json_null());
        json_object_set_new(o, "figures_truncated", json_true());
        json_object_set_new(o, "verdict", od_json_string(od_oom_verdict_name(m->verdict)));
        json_array_append_new(sums, o);
    }
    json_object_set_new(doc, "memory_summaries", sums);
    if (t->stats) {
        const od_mem_stats *m = t->stats;
        json_t *o = json_object();
#define MS(bit, key, v) json_object_set_new(o, key, (m->have & (bit)) ? json_integer((json_int_t)(v)) : json_null())
        json_object_set_new(o, "kind", od_json_string(m->jax ? "jax" : "pytorch"));
        MS(OD_MS_ALLOCATED, "allocated_bytes", m->allocated_bytes);
        MS(OD_MS_ALLOCATED_PEAK, "allocated_peak_bytes", m->allocated_peak_bytes);
        MS(OD_MS_RESERVED, "reserved_bytes", m->reserved_bytes);
        MS(OD_MS_RESERVED_PEAK, "reserved_peak_bytes", m->reserved_peak_bytes);
        MS(OD_MS_INACTIVE, "inactive_split_bytes", m->inactive_split_bytes);
        MS(OD_MS_LIMIT, "limit_bytes", m->limit_bytes);
        MS(OD_MS_LARGEST_FREE, "largest_free_block_bytes", m->largest_free_block_bytes);
        MS(OD_MS_OOMS, "ooms", m->ooms);
        MS(OD_MS_RETRIES, "alloc_retries", m->retries);
#undef MS
        json_object_set_new(o, "cut_short", json_boolean(m->cut_short));
        json_object_set_new(o, "verdict", od_json_string(od_oom_verdict_name(m->verdict)));
        json_object_set_new(doc, "memory_stats", o);
    } else {
        json_object_set_new(doc, "memory_stats", json_null());
    }
    json_t *gpus = json_array();
    for (size_t i = 0; i < t->n_gpus; i++) {
        const od_smi_gpu *g = &t->gpus[i];
        json_t *o = json_object();
        json_object_set_new(o, "index", json_integer(g->index));
        json_object_set_new(o, "name", od_json_string(g->name));
        json_object_set_new(o, "bus_id", od_json_string(g->bus_id));
        json_object_set_new(o, "total_bytes", json_integer((json_int_t)g->total_bytes));
        json_object_set_new(o, "used_bytes", json_integer((json_int_t)g->used_bytes));
        json_object_set_new(o, "free_bytes", g->have_free ? json_integer((json_int_t)g->free_bytes) : json_null());
        json_object_set_new(o, "reserved_bytes", g->have_reserved ? json_integer((json_int_t)g->reserved_bytes) : json_null());
        json_array_append_new(gpus, o);
    }
    json_t *procs = json_array();
    for (size_t i = 0; i < t->n_procs; i++) {
        const od_smi_process *p = &t->procs[i];
        json_t *o = json_object();
        json_object_set_new(o, "gpu", json_integer(p->gpu));
        json_object_set_new(o, "pid", json_integer((json_int_t)p->pid));
        json_object_set_new(o, "name", od_json_string(p->name));
        json_object_set_new(o, "bytes", json_integer((json_int_t)p->bytes));
        json_array_append_new(procs, o);
    }
    json_t *smi = json_object();
    json_object_set_new(smi, "format", t->smi_format ? od_json_string(t->smi_format) : json_null());
    json_object_set_new(smi, "gpus", gpus);
    json_object_set_new(smi, "processes", procs);
    json_object_set_new(smi, "verdict", od_json_string(od_oom_verdict_name(t->smi_verdict)));
    json_object_set_new(doc, "nvidia_smi", smi);
    return doc;
}
