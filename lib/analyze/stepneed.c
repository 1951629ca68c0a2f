/* stepneed.c - a failed first step's need, extrapolated from its own trace (stepneed.h). */
#include "analyze/stepneed.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/allocpolicy.h"
#include "base/mem.h"
#include "base/u64map.h"
#include "model/sites.h"

/* A key of an allocation: its stack and requested size. */
static uint64_t key_of(const od_trace_entry *e)
{
    return ((uint64_t)e->stack << 40) ^ e->size;
}

/* Whether a stack builds a module: a module __init__ inside another (a layer inside the
 * model), with no forward. Moving a built model (.to(), _apply) does not count: it gives
 * every parameter one stack. */
static int construction(const od_snapshot *s, uint32_t stack)
{
    uint32_t n, inits = 0;
    const uint32_t *fr = od_snapshot_stack(s, stack, &n);
    for (uint32_t i = 0; i < n; i++) {
        const char *name = s->frames[fr[i]].name;
        if (name && !strcmp(name, "forward"))
            return 0;
        if (name && !strcmp(name, "_apply"))
            return 0;
        inits += name && !strcmp(name, "__init__");
    }
    return inits >= 2;
}

static int has_forward(const od_snapshot *s, uint32_t stack)
{
    uint32_t n;
    const uint32_t *fr = od_snapshot_stack(s, stack, &n);
    for (uint32_t i = 0; i < n; i++)
        if (s->frames[fr[i]].name && !strcmp(s->frames[fr[i]].name, "forward"))
            return 1;
    return 0;
}

typedef struct {
    size_t count, first, last;
    double gap_min, gap_max;
} occ;

/* The layer count: the most a construction key repeats (2 at least). */
static size_t layer_count(const od_trace *t, size_t until)
{
    od_u64map m = {0};
    size_t best = 0;
    for (size_t i = 0; i < until; i++) {
        if (od_trace_action(t->entries, i) != OD_ACT_ALLOC)
            continue;
        od_trace_entry e = od_trace_at(t->entries, i);
        if (!e.stack || !construction(t->snap, e.stack))
            continue;
        uint32_t c = 0;
        od_u64map_get(&m, key_of(&e), &c);
        if (!od_u64map_put(&m, key_of(&e), c + 1))
            break;
        if (c + 1 > best)
            best = c + 1;
    }
    od_u64map_free(&m);
    return best >= 2 ? best : 0;
}

void od_step_need_estimate(const od_trace *t, size_t oom, const uint8_t *life_cats, od_step_need *out)
{
    memset(out, 0, sizeof *out);
    if (!t->has_trace || oom >= t->n_entries || !life_cats)
        return;
    /* The failing forward: from the first forward allocation after the last boundary. */
    size_t from = 0;
    for (size_t k = 0; k < t->n_boundaries; k++)
        if (t->boundaries[k] <= oom)
            from = t->boundaries[k];
    size_t fw = SIZE_MAX;
    for (size_t i = from; i < oom && fw == SIZE_MAX; i++)
        if (od_trace_action(t->entries, i) == OD_ACT_ALLOC) {
            od_trace_entry e = od_trace_at(t->entries, i);
            if (e.stack && has_forward(t->snap, e.stack))
                fw = i;
        }
    size_t n_layers = layer_count(t, fw == SIZE_MAX ? oom : fw);
    if (fw == SIZE_MAX || !n_layers)
        return;
    /* Occurrences of each key in the forward. */
    od_u64map m = {0};
    occ *o = NULL;
    size_t n_o = 0, cap = 0;
    for (size_t i = fw; i < oom; i++) {
        if (od_trace_action(t->entries, i) != OD_ACT_ALLOC)
            continue;
        od_trace_entry e = od_trace_at(t->entries, i);
        if (!e.stack)
            continue;
        uint32_t k;
        if (!od_u64map_get(&m, key_of(&e), &k)) {
            if (!od_grow((void **)&o, &cap, n_o + 1, sizeof *o) || !od_u64map_put(&m, key_of(&e), (uint32_t)n_o))
                goto out;
            k = (uint32_t)n_o;
            o[n_o++] = (occ){0, i, i, INFINITY, 0};
        } else {
            double g = (double)(i - o[k].last);
            o[k].gap_min = g < o[k].gap_min ? g : o[k].gap_min;
            o[k].gap_max = g > o[k].gap_max ? g : o[k].gap_max;
            o[k].last = i;
        }
        o[k].count++;
    }
    /* The layer's period: evenly spaced occurrences (gaps within 25% of each other), the
     * longest mean gap, then the earliest first. */
    double best_gap = 0;
    for (size_t k = 0; k < n_o; k++)
        if (o[k].count >= 2 && o[k].count <= n_layers && o[k].gap_max <= 1.25 * o[k].gap_min) {
            double gap = (double)(o[k].last - o[k].first) / (double)(o[k].count - 1);
            best_gap = gap > best_gap ? gap : best_gap;
        }
    size_t pick = SIZE_MAX;
    for (size_t k = 0; k < n_o; k++)
        if (o[k].count >= 2 && o[k].count <= n_layers && o[k].gap_max <= 1.25 * o[k].gap_min &&
            (double)(o[k].last - o[k].first) / (double)(o[k].count - 1) >= best_gap / 1.1 &&
            (pick == SIZE_MAX || o[k].first < o[pick].first))
            pick = k;
    if (pick == SIZE_MAX)
        goto out;
    double period = (double)(o[pick].last - o[pick].first) / (double)(o[pick].count - 1);
    double partial = (double)(oom - o[pick].last) / period;
    double done = (double)(o[pick].count - 1) + (partial < 1 ? partial : 1);
    if (done < 1)
        goto out;
    size_t first = o[pick].first;
    od_trace_entry starter = od_trace_at(t->entries, first);
    /* What was live at the OOM, by who made it. */
    uint64_t params = 0, layers = 0, besides = 0, starter_block = 0;
    for (size_t i = 0; i < t->n_lives; i++) {
        const od_lifetime *l = &t->lives[i];
        if (!od_trace_live_after(l, oom - 1))
            continue;
        if (life_cats[i] == OD_CAT_PARAMETERS)
            params += l->block_bytes;
        if (l->alloc_index != OD_TRACE_BEFORE && l->alloc_index >= first && l->alloc_index < oom)
            layers += l->block_bytes;
        else
            besides += l->block_bytes;
        if (l->alloc_index == first)
            starter_block = l->block_bytes;
    }
    out->have = 1;
    out->layers_total = n_layers;
    out->layers_done = done;
    out->first_layer_entry = first;
    out->params_bytes = params;
    out->besides_bytes = besides;
    out->per_layer_bytes = (uint64_t)llround((double)layers / done);
    out->layer_input_bytes = starter_block ? starter_block : od_round_request(starter.size);
    out->forward_bytes = besides + out->per_layer_bytes * n_layers;
    out->ckpt_bytes = besides + out->layer_input_bytes * n_layers + out->per_layer_bytes;
out:
    free(o);
    od_u64map_free(&m);
}
