/* trend_doc.c - trend --json's document (see trend_doc.h). */
#include "render/trend_doc.h"

#include "base/units.h"

#include <math.h>
#include <stdlib.h>


static json_t *fit_json(const od_series *s, const od_trend_fit *f, uint64_t capacity)
{
    json_t *o = json_object();
    json_object_set_new(o, "metric", json_string(od_metric_name(f->metric)));
    json_object_set_new(o, "verdict", json_string(od_trend_verdict_name(f->verdict)));
    json_object_set_new(o, "points", json_integer((json_int_t)f->n_points));
    json_object_set_new(o, "warmup_points", json_integer((json_int_t)f->warmup_points));
    json_object_set_new(o, s->time_indexed ? "growth_bytes_per_second" : "growth_bytes_per_step",
                        json_integer((json_int_t)od_round_clamped(f->growth_per_x)));
    json_object_set_new(o, "r2", json_real(round(f->r2 * 10000) / 10000));
    json_object_set_new(o, "first_bytes", json_integer((json_int_t)od_round_clamped(f->first_bytes)));
    json_object_set_new(o, "last_bytes", json_integer((json_int_t)od_round_clamped(f->last_bytes)));
    json_object_set_new(o, "max_bytes", json_integer((json_int_t)od_round_clamped(f->max_bytes)));
    json_object_set_new(o, "baseline_bytes", json_integer((json_int_t)od_round_clamped(f->baseline_bytes)));
    if (f->verdict == OD_TREND_SPIKE) {
        json_object_set_new(o, s->time_indexed ? "spike_time_s" : "spike_step", json_real(f->spike_x));
        json_object_set_new(o, "spike_bytes", json_integer((json_int_t)od_round_clamped(f->spike_bytes)));
    }
    const char *pk = s->time_indexed ? "projected_oom_seconds" : "projected_oom_step";
    if (f->have_projection)
        json_object_set_new(o, pk, s->time_indexed ? json_real(round(f->projected_oom * 10) / 10)
                                                   : json_integer((json_int_t)f->projected_oom));
    else
        json_object_set_new(o, pk, json_null());
    (void)capacity;
    return o;
}

json_t *od_trend_document(const char *name, const od_series *s, const od_iterations *its, const od_trend_fit *fit,
                          const od_trend_fit *others, const int *have_other, uint64_t capacity, int bounded)
{
    json_t *doc = json_object();
    json_object_set_new(doc, "schema_version", json_integer(1));
    json_object_set_new(doc, "input", json_string(name));
    json_object_set_new(doc, "index", json_string(its ? "iteration" : s->time_indexed ? "time_s" : "step"));
    if (its) {
        json_t *lv = json_array();
        for (size_t i = 0; i < its->n; i++)
            json_array_append_new(lv, json_integer((json_int_t)its->items[i].live_bytes));
        json_object_set_new(doc, "iterations", json_pack("{s:s,s:s,s:I,s:o}", "source", od_iter_source_name(its->source),
                                                         "marker", its->marker, "device", (json_int_t)its->device,
                                                         "live_bytes", lv));
    }
    json_object_set_new(doc, "capacity_bytes", capacity ? json_integer((json_int_t)capacity) : json_null());
    if (its)
        json_object_set_new(doc, "bounded", json_boolean(bounded));
    json_t *p = fit_json(s, fit, capacity);
    json_object_update(doc, p);
    json_decref(p);
    json_t *arr = json_array();
    for (int m = 0; m < OD_METRIC_COUNT; m++)
        if (have_other[m])
            json_array_append_new(arr, fit_json(s, &others[m], capacity));
    json_object_set_new(doc, "other_metrics", arr);
    return doc;
}

