/* doctor_doc.c - the diagnosis as its --json document (see doctor_doc.h). */
#include "render/doctor_doc.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analyze/advice.h"
#include "base/torchver.h"
#include "base/textsafe.h"
#include "base/units.h"
#include "model/sites.h"
#include "render/jsonstr.h"
#include "render/triage_doc.h"

/* s as JSON may carry it: valid UTF-8 as it is, else with each bad byte replaced by U+FFFD
 * (base/textsafe.h), so that no string from a snapshot's frames is dropped for its bytes.
 * The copy lives in one of 8 buffers of 4 KiB, reused in turn (enough for one json_pack). */
static const char *U(const char *s)
{
    static _Thread_local char bufs[8][4096];
    static _Thread_local unsigned next;
    if (!s)
        return "";
    size_t len = strlen(s);
    if (od_utf8_valid(s, len))
        return s;
    char *b = bufs[next++ % 8];
    od_utf8_sanitize(s, len, b, sizeof bufs[0]);
    b[sizeof bufs[0] - 1] = 0;
    return b;
}

/* ---------- the diagnosis ---------- */

static json_t *iterations_json(const od_iterations *it)
{
    if (!it || it->source == OD_ITER_NONE)
        return json_null();
    json_t *o = json_object();
    json_object_set_new(o, "source", od_json_string(od_iter_source_name(it->source)));
    json_object_set_new(o, "marker", od_json_string(it->marker));
    json_object_set_new(o, "count", json_integer((json_int_t)it->n));
    json_t *lv = json_array();
    for (size_t i = 0; i < it->n; i++)
        json_array_append_new(lv, json_integer((json_int_t)it->items[i].live_bytes));
    json_object_set_new(o, "live_bytes", lv);
    json_object_set_new(o, "growth_bytes_per_iteration",
                        it->have_fit ? json_integer((json_int_t)llround(it->fit.growth_per_x)) : json_null());
    json_object_set_new(o, "r2", it->have_fit ? json_real(round(it->fit.r2 * 1e4) / 1e4) : json_null());
    int bounded = 0, tv = od_iterations_verdict(it, &bounded);
    json_object_set_new(o, "trend", tv >= 0 ? od_json_string(od_trend_verdict_name((od_trend_verdict)tv)) : json_null());
    json_object_set_new(o, "bounded", json_boolean(bounded));
    json_object_set_new(o, "leak", json_boolean(od_iterations_leak(it)));
    json_object_set_new(o, "judged_iterations", json_integer((json_int_t)it->judged));
    json_object_set_new(o, "surviving_bytes_per_iteration", json_integer((json_int_t)it->surviving_bytes_per_iteration));
    json_object_set_new(o, "held_bytes_per_iteration", json_integer((json_int_t)it->held_bytes_per_iteration));
    json_t *sv = json_array();
    for (size_t i = 0; i < it->n_survivors && i < 10; i++) {
        const od_survivor *x = &it->survivors[i];
        json_array_append_new(sv, json_pack("{s:s,s:s,s:I,s:I,s:I,s:I,s:I,s:o,s:o}", "site", U(x->site), "where", U(x->where),
                                            "bytes_per_iteration", (json_int_t)x->bytes_per_iteration, "surviving_bytes",
                                            (json_int_t)x->surviving_bytes, "iterations", (json_int_t)x->iterations,
                                            "held_at_end_bytes", (json_int_t)x->held_at_end_bytes, "judged_held_bytes",
                                            (json_int_t)x->judged_held_bytes, "released_entry",
                                            x->released_index == SIZE_MAX ? json_null() : json_integer((json_int_t)x->released_index),
                                            "released_at", x->released_at[0] ? od_json_string(x->released_at) : json_null()));
    }
    json_object_set_new(o, "survivors", sv);
    return o;
}

/* A full stack as "file:line:function" strings, innermost first. */
static json_t *frames_json(const od_snapshot *snap, uint32_t stack)
{
    json_t *a = json_array();
    uint32_t n;
    const uint32_t *fr = od_snapshot_stack(snap, stack, &n);
    char buf[1024];
    for (uint32_t i = 0; i < n; i++)
        json_array_append_new(a, od_json_string(od_frame_format(snap, fr[i], buf, sizeof buf)));
    return a;
}

static json_t *categories_json(const od_categories *c, const od_snapshot *snap)
{
    if (!c)
        return json_null();
    json_t *o = json_object();
    json_object_set_new(o, "at", od_json_string(c->have_peak ? "peak" : "end"));
    json_object_set_new(o, "peak_entry", c->have_peak ? json_integer((json_int_t)c->peak_entry) : json_null());
    json_object_set_new(o, "total_bytes", json_integer((json_int_t)c->total_bytes));
    json_t *b = json_object();
    for (int k = 0; k < OD_CAT_COUNT; k++) {
        json_t *x = json_object();
        json_object_set_new(x, "bytes", json_integer((json_int_t)c->bytes[k]));
        json_object_set_new(x, "count", json_integer((json_int_t)c->count[k]));
        json_object_set_new(x, "top_site", c->top_site[k][0] ? od_json_string(c->top_site[k]) : json_null());
        json_object_set_new(x, "basis", od_json_string(od_category_basis((od_category)k)));
        json_object_set_new(b, od_category_name((od_category)k), x);
    }
    json_object_set_new(o, "by_category", b);
    json_t *ts = json_array();
    for (size_t i = 0; i < c->n_top_stacks; i++) {
        char site[1024], mod[256];
        int64_t sf, wf;
        od_stack_site(snap, c->top_stacks[i].stack, &sf, &wf);
        od_frame_format(snap, sf, site, sizeof site);
        od_stack_module_path(snap, c->top_stacks[i].stack, mod, sizeof mod);
        json_array_append_new(ts, json_pack("{s:I,s:I,s:s,s:s,s:s,s:o}", "bytes", (json_int_t)c->top_stacks[i].bytes,
                                            "count", (json_int_t)c->top_stacks[i].count, "category",
                                            od_category_name(c->top_stacks[i].category), "site", U(site),
                                            "module_path", U(mod), "frames", frames_json(snap, c->top_stacks[i].stack)));
    }
    json_object_set_new(o, "top_stacks", ts);
    json_t *bm = json_array();
    for (size_t i = 0; i < c->n_top_modules; i++)
        json_array_append_new(bm, json_pack("{s:s,s:I}", "module_path", U(c->top_modules[i].path), "bytes",
                                            (json_int_t)c->top_modules[i].bytes));
    json_object_set_new(o, "by_module", bm);
    json_object_set_new(o, "unknown_share",
                        json_real(c->total_bytes ? round(1e4 * (double)c->bytes[OD_CAT_UNKNOWN] / (double)c->total_bytes) / 1e4 : 0));
    return o;
}

static json_t *snapshots_json(const od_diagnosis *d, const od_loaded *ins)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < d->n_snapshots; i++) {
        const od_snapshot_findings *f = &d->snapshots[i];
        const od_device_summary *s = f->figures;
        json_t *o = json_object();
        json_object_set_new(o, "file", od_json_string(ins[f->input].name));
        json_object_set_new(o, "device", json_integer((json_int_t)f->device));
        json_object_set_new(o, "verdict", od_json_string(od_verdict_name(f->verdict)));
        json_object_set_new(o, "reserved_bytes", json_integer((json_int_t)s->reserved_bytes));
        json_object_set_new(o, "allocated_bytes", json_integer((json_int_t)s->allocated_bytes));
        json_object_set_new(o, "stranded_bytes", json_integer((json_int_t)s->stranded_bytes));
        json_object_set_new(o, "largest_free_block_bytes", json_integer((json_int_t)s->largest_free_block_bytes));
        json_object_set_new(o, "peak_requested_bytes", s->has_trace ? json_integer((json_int_t)s->peak_requested_bytes) : json_null());
        const od_trace *t = s->trace;
        if (t && t->has_trace && t->n_entries)
            json_object_set_new(o, "peak", json_pack("{s:o,s:o,s:I,s:I,s:b}", "entry",
                                                     t->has_peak ? json_integer((json_int_t)t->peak_index) : json_null(),
                                                     "time_us", t->has_peak ? json_integer((json_int_t)t->peak_time_us) : json_null(),
                                                     "allocated_bytes", (json_int_t)t->peak_block_bytes,
                                                     "requested_bytes", (json_int_t)t->peak_requested_at_peak,
                                                     "from_replay", t->blocks_from_replay));
        else
            json_object_set_new(o, "peak", json_null());
        const od_inference *inf = &f->inference;
        if (inf->is_inference)
            json_object_set_new(o, "inference", json_pack("{s:I,s:I,s:b,s:I}", "decode_steps", (json_int_t)inf->decode_steps,
                                                          "kv_cache_bytes_per_token", (json_int_t)inf->kv_cache_bytes_per_token,
                                                          "recomputes_each_step", inf->recomputes_each_step,
                                                          "weights_bytes", (json_int_t)inf->weights_bytes));
        else
            json_object_set_new(o, "inference", json_null());
        json_object_set_new(o, "graph_pools", json_pack("{s:I,s:I,s:I}", "count", (json_int_t)f->graph_pools,
                                                        "segments", (json_int_t)f->graph_pool_segments,
                                                        "reserved_bytes", (json_int_t)f->graph_pool_reserved_bytes));
        if (f->have_spike)
            json_object_set_new(o, "spike", json_pack("{s:I,s:I,s:I,s:s}", "iteration", (json_int_t)f->spike_iteration,
                                                      "peak_bytes", (json_int_t)f->spike_peak_bytes,
                                                      "typical_peak_bytes", (json_int_t)f->typical_peak_bytes,
                                                      "grown_sites", U(f->spike_sites)));
        else
            json_object_set_new(o, "spike", json_null());
        if (f->need.have)
            json_object_set_new(o, "step_need", json_pack("{s:I,s:f,s:I,s:I,s:I,s:I,s:I}", "layers_total",
                                                          (json_int_t)f->need.layers_total, "layers_done",
                                                          round(f->need.layers_done * 100) / 100, "per_layer_bytes",
                                                          (json_int_t)f->need.per_layer_bytes, "layer_input_bytes",
                                                          (json_int_t)f->need.layer_input_bytes, "besides_bytes",
                                                          (json_int_t)f->need.besides_bytes, "forward_bytes",
                                                          (json_int_t)f->need.forward_bytes, "checkpointed_bytes",
                                                          (json_int_t)f->need.ckpt_bytes));
        else
            json_object_set_new(o, "step_need", json_null());
        json_object_set_new(o, "iterations", iterations_json(f->iterations));
        json_object_set_new(o, "categories", categories_json(f->categories, ins[f->input].snapshot));
        if (f->have_oom)
            json_object_set_new(o, "oom", json_pack("{s:I,s:I,s:I,s:I,s:I}", "request_bytes", (json_int_t)f->oom_request_bytes,
                                                    "device_free_bytes", (json_int_t)f->oom_device_free_bytes,
                                                    "allocated_bytes", (json_int_t)f->oom_allocated_bytes,
                                                    "reserved_bytes", (json_int_t)f->oom_reserved_bytes,
                                                    "max_reserved_bytes", (json_int_t)f->max_reserved_bytes));
        else
            json_object_set_new(o, "oom", json_null());
        if (f->n_whatifs) {
            json_t *x = json_object(), *rs = json_array();
            json_object_set_new(x, "cap_bytes", json_integer((json_int_t)f->whatif_cap_bytes));
            json_object_set_new(x, "cap_source", od_json_string(f->whatif_cap_source));
            json_object_set_new(x, "reproduces_oom", json_boolean(f->whatif_reproduces));
            json_object_set_new(x, "answerable", json_boolean(!f->whatif_unanswerable));
            for (size_t k = 0; k < f->n_whatifs; k++) {
                const od_whatif *w = &f->whatifs[k];
                json_array_append_new(rs, json_pack("{s:s,s:b,s:o,s:I,s:I,s:b}", "setting", w->setting[0] ? w->setting : "(as recorded)",
                                                    "oom", w->oom, "oom_entry",
                                                    w->oom ? json_integer((json_int_t)w->oom_entry) : json_null(),
                                                    "peak_reserved_bytes", (json_int_t)w->peak_reserved_bytes,
                                                    "stranded_at_peak_bytes", (json_int_t)w->stranded_at_peak_bytes,
                                                    "approximate", w->approximate));
            }
            json_object_set_new(x, "results", rs);
            json_object_set_new(o, "whatifs", x);
        } else {
            json_object_set_new(o, "whatifs", json_null());
        }
        if (f->have_expected) {
            json_t *x = json_object(), *by = json_object();
            json_object_set_new(x, "peak_bytes", json_integer((json_int_t)f->expected_peak_bytes));
            for (int k = 0; k < OD_CAT_COUNT; k++)
                json_object_set_new(by, od_category_name((od_category)k), json_integer((json_int_t)f->expected_bytes[k]));
            json_object_set_new(x, "by_category", by);
            json_object_set_new(x, "worst_category",
                                f->worst_category < 0 ? json_null()
                                : f->worst_category == OD_CAT_COUNT
                                    ? od_json_string("gradients+activations+logits_and_loss")
                                    : od_json_string(od_category_name((od_category)f->worst_category)));
            json_object_set_new(x, "excess_bytes", f->worst_category < 0 ? json_null() : json_integer((json_int_t)f->worst_excess_bytes));
            json_object_set_new(o, "expected", x);
        } else {
            json_object_set_new(o, "expected", json_null());
        }
        json_array_append_new(arr, o);
    }
    return arr;
}

static json_t *opt_bytes(uint64_t v)
{
    return v ? json_integer((json_int_t)v) : json_null();
}

/* One do_now / long_term item: what, its effect, how it was checked, the command. */
static json_t *remedy_json(const od_remedy *m, size_t i)
{
    const od_check *c = &m->check;
    json_t *ck = json_pack("{s:s,s:o,s:o,s:o,s:s}", "method", od_check_method_name(c->method), "avoids_oom",
                           c->avoids_oom < 0 ? json_null() : json_boolean(c->avoids_oom), "predicted_peak_bytes",
                           opt_bytes(c->predicted_peak_bytes), "releases_bytes", opt_bytes(c->releases_bytes), "detail",
                           U(c->detail));
    return json_pack("{s:i,s:s,s:s,s:o,s:o}", "rank", (int)i + 1, "action", U(m->action), "effect", U(m->effect), "check", ck,
                     "command", m->command[0] ? od_json_string(m->command) : json_null());
}

json_t *od_diagnosis_document(const od_diagnosis *d, const od_loaded *ins, size_t n)
{
    json_t *doc = json_object();
    json_object_set_new(doc, "schema_version", json_integer(1));
    json_object_set_new(doc, "verdict", od_json_string(od_verdict_name(d->verdict)));
    char headline[700] = "";
    if (d->verdict == OD_VERDICT_LEAK && d->site[0]) {
        char a[32];
        snprintf(headline, sizeof headline, "%s per iteration kept alive by %s",
                 od_format_iec((uint64_t)llround(d->growth_bytes_per_step > 0 ? d->growth_bytes_per_step : 0), a, sizeof a),
                 d->site);
    }
    json_object_set_new(doc, "headline", headline[0] ? od_json_string(headline) : json_null());
    json_object_set_new(doc, "growth_bytes_per_step",
                        d->verdict == OD_VERDICT_LEAK && d->have_growth_per_step
                            ? json_integer((json_int_t)llround(d->growth_bytes_per_step)) : json_null());
    if (d->verdict == OD_VERDICT_LEAK && d->have_growth_per_second)
        json_object_set_new(doc, "growth_bytes_per_second", json_integer((json_int_t)llround(d->growth_bytes_per_second)));
    json_object_set_new(doc, "site", d->site[0] ? od_json_string(d->site) : json_null());
    json_object_set_new(doc, "decided_by", d->decided_by != OD_NO_INPUT ? od_json_string(ins[d->decided_by].name) : json_null());
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
        json_t *o = json_object();
        json_object_set_new(o, "file", od_json_string(ins[i].name));
        json_object_set_new(o, "kind", od_json_string(od_input_kind_name(ins[i].kind)));
        if (ins[i].profile)
            json_object_set_new(o, "profile_kind", od_json_string(od_profile_kind_name(ins[i].profile->kind)));
        json_array_append_new(arr, o);
    }
    json_object_set_new(doc, "inputs", arr);
    arr = json_array();
    for (size_t i = 0; i < d->n_evidence; i++) {
        const od_evidence *e = &d->evidence[i];
        json_t *o = json_object();
        json_object_set_new(o, "text", od_json_string(e->text));
        json_object_set_new(o, "file", e->input != OD_NO_INPUT ? od_json_string(ins[e->input].name) : json_null());
        json_object_set_new(o, "key", e->key ? od_json_string(e->key) : json_null());
        json_object_set_new(o, "value", e->key ? (e->value == floor(e->value) && fabs(e->value) < 9e18
                                                      ? json_integer((json_int_t)e->value)
                                                      : json_real(round(e->value * 1e4) / 1e4))
                                               : json_null());
        json_array_append_new(arr, o);
    }
    json_object_set_new(doc, "evidence", arr);
    json_t *nw = json_array(), *lt = json_array();
    for (size_t i = 0; i < d->n_do_now; i++)
        json_array_append_new(nw, remedy_json(&d->do_now[i], i));
    for (size_t i = 0; i < d->n_long_term; i++)
        json_array_append_new(lt, remedy_json(&d->long_term[i], i));
    json_object_set_new(doc, "do_now", nw);
    json_object_set_new(doc, "long_term", lt);
    json_object_set_new(doc, "verify", od_json_string(d->verify));
    json_object_set_new(doc, "verify_command", d->verify_command[0] ? od_json_string(d->verify_command) : json_null());
    json_object_set_new(doc, "oom_report", d->report ? od_triage_report_json(d->report) : json_null());
    json_object_set_new(doc, "snapshots", snapshots_json(d, ins));
    json_object_set_new(doc, "highest_snapshot",
                        d->n_snapshots > 1 ? od_json_string(ins[d->snapshots[d->highest_snapshot].input].name) : json_null());
    return doc;
}


void od_diagnosis_each_evidence(const json_t *doc, od_evidence_fn fn, void *ctx)
{
    const json_t *ev = json_object_get(doc, "evidence"), *ins = json_object_get(doc, "inputs");
    size_t n_ins = json_array_size(ins);
    for (size_t pass = 0; pass <= n_ins; pass++) {
        const char *want = pass < n_ins ? json_string_value(json_object_get(json_array_get(ins, pass), "file")) : NULL;
        if (pass < n_ins && !want)
            continue;
        int first = 1;
        size_t i;
        const json_t *e;
        json_array_foreach(ev, i, e) {
            const char *file = json_string_value(json_object_get(e, "file"));
            const char *text = json_string_value(json_object_get(e, "text")), *shown;
            if (!text || (want ? !file || strcmp(file, want) != 0 : file != NULL))
                continue;
            shown = text;
            if (want) {
                size_t l = strlen(want);
                if (strncmp(text, want, l) == 0 && text[l] == ':' && text[l + 1] == ' ')
                    shown = text + l + 2;
            }
            fn(ctx, want, first, shown, text);
            first = 0;
        }
    }
}
