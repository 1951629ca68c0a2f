/* iterations.c - iteration boundaries, live memory per iteration, surviving sites. */
#include "iterations.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "categorize.h"
#include "mem.h"
#include "sites.h"
#include "summary.h"
#include "u64map.h"

const char *od_iter_source_name(od_iter_source s)
{
    switch (s) {
    case OD_ITER_NONE: return "none";
    case OD_ITER_ANNOTATIONS: return "annotations";
    case OD_ITER_PATTERN: return "pattern";
    }
    return "?";
}

static int is_live(const od_block *b)
{
    return b->state == OD_BLOCK_ACTIVE_ALLOCATED || b->state == OD_BLOCK_ACTIVE_PENDING_FREE;
}

uint64_t od_trace_start_live_bytes(const od_snapshot *s, const od_device_trace *tr)
{
    od_u64map seen = {0};
    uint64_t start = 0;
    for (size_t i = 0; tr && i < tr->n_entries; i++) {
        const od_trace_entry *e = &tr->entries[i];
        uint32_t dummy;
        if (e->action == OD_ACT_ALLOC)
            od_u64map_put(&seen, e->addr, 0);
        else if (e->action == OD_ACT_FREE_COMPLETED && !od_u64map_get(&seen, e->addr, &dummy))
            start += od_round_request(e->size);
    }
    for (size_t i = 0; tr && i < s->n_segments; i++) {
        const od_segment *seg = &s->segments[i];
        if (seg->device != tr->device)
            continue;
        for (size_t k = 0; k < seg->n_blocks; k++) {
            const od_block *b = &s->blocks[seg->first_block + k];
            uint32_t dummy;
            if (is_live(b) && !od_u64map_get(&seen, b->address, &dummy))
                start += b->size;
        }
    }
    od_u64map_free(&seen);
    return start;
}

/* ---------- boundaries ---------- */

typedef struct {
    uint64_t *t;   /* boundary times (annotations) or entry indices (pattern) */
    size_t n;
} bounds;

static int cmp_u64(const void *pa, const void *pb)
{
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    return a < b ? -1 : a > b;
}

/* START times of one annotation name inside the trace's time span. Optimizer.step is
 * preferred: it runs once per training step in every training loop that has an optimizer. */
static int from_annotations(const od_snapshot *s, const od_device_trace *tr, bounds *b, char *marker, size_t msize)
{
    if (!tr->n_entries || !s->n_annotations)
        return 1;
    uint64_t lo = tr->entries[0].time_us, hi = tr->entries[tr->n_entries - 1].time_us;
    const char *best = NULL;
    size_t best_n = 0;
    int best_pref = 0;
    for (size_t i = 0; i < s->n_annotations; i++) {
        const od_annotation *a = &s->annotations[i];
        if (!a->stage || strcmp(a->stage, "START") != 0 || !a->name || (a->device != tr->device && a->device >= 0))
            continue;
        if (best && strcmp(best, a->name) == 0)
            continue;
        size_t n = 0;
        for (size_t k = 0; k < s->n_annotations; k++) {
            const od_annotation *c = &s->annotations[k];
            if (c->stage && strcmp(c->stage, "START") == 0 && c->name && strcmp(c->name, a->name) == 0 &&
                (c->device == tr->device || c->device < 0) && c->time_us >= lo && c->time_us <= hi)
                n++;
        }
        int pref = strstr(a->name, "Optimizer.step") != NULL;
        if (n >= 3 && (pref > best_pref || (pref == best_pref && n > best_n))) {
            best = a->name;
            best_n = n;
            best_pref = pref;
        }
    }
    if (!best)
        return 1;
    b->t = malloc(best_n * sizeof *b->t);
    if (!b->t)
        return 0;
    for (size_t k = 0; k < s->n_annotations; k++) {
        const od_annotation *c = &s->annotations[k];
        if (c->stage && strcmp(c->stage, "START") == 0 && c->name && strcmp(c->name, best) == 0 &&
            (c->device == tr->device || c->device < 0) && c->time_us >= lo && c->time_us <= hi && b->n < best_n)
            b->t[b->n++] = c->time_us;
    }
    qsort(b->t, b->n, sizeof *b->t, cmp_u64);
    snprintf(marker, msize, "%s", best);
    return 1;
}

/* The allocation that repeats once per iteration. For every (stack, size) key made 4
 * times or more, score = its smallest gap between two occurrences x (occurrences - 1):
 * a once-per-iteration allocation spans the trace with gaps of a whole iteration, while
 * per-layer ones (same stack for every layer) repeat within a phase, with small gaps,
 * and irregular ones have some small gap. Among keys scoring within 10% of the best,
 * the one made most often (then the first made) marks the boundaries. Allocations of
 * parameters are no candidates (building a model repeats per layer, not per iteration),
 * and the windows found must give back at least 60% of what they allocate: an
 * iteration frees its temporaries, activations and gradients within it (the fixtures'
 * training steps free 92-100%, the leaking one included), while layers of one forward
 * keep their activations for backward (43% freed in a forward that died at its OOM) and
 * a model being built frees nothing. */
typedef struct {
    uint32_t count;
    size_t first, last, gap_min;
} keyinfo;

static int from_pattern(const od_snapshot *s, const od_device_trace *tr, bounds *b, char *marker, size_t msize)
{
    const od_trace_entry *e = tr->entries;
    size_t n = tr->n_entries;
    od_u64map keys = {0};
    keyinfo *ki = NULL;
    size_t n_keys = 0, cap = 0;
    int ok = 0;
    for (size_t i = 0; i < n; i++) {
        if (e[i].action != OD_ACT_ALLOC || e[i].stack == 0)
            continue;
        uint64_t key = ((uint64_t)e[i].stack << 40) ^ e[i].size;
        uint32_t k;
        if (!od_u64map_get(&keys, key, &k)) {
            if (od_categorize_stack(s, e[i].stack) == OD_CAT_PARAMETERS)
                continue;
            if (!od_grow((void **)&ki, &cap, n_keys + 1, sizeof *ki))
                goto out;
            k = (uint32_t)n_keys++;
            ki[k] = (keyinfo){0, i, i, SIZE_MAX};
            if (!od_u64map_put(&keys, key, k))
                goto out;
        } else {
            size_t gap = i - ki[k].last;
            if (gap < ki[k].gap_min)
                ki[k].gap_min = gap;
            ki[k].last = i;
        }
        ki[k].count++;
    }
    /* Four repeats at least: three can be layers of a forward that died early. */
    double best = 0;
    for (size_t k = 0; k < n_keys; k++)
        if (ki[k].count >= 4) {
            double sc = (double)ki[k].gap_min * (double)(ki[k].count - 1);
            best = sc > best ? sc : best;
        }
    size_t pick = SIZE_MAX;
    for (size_t k = 0; k < n_keys && best > 0; k++) {
        if (ki[k].count < 4 || (double)ki[k].gap_min * (double)(ki[k].count - 1) < 0.9 * best)
            continue;
        if (pick == SIZE_MAX || ki[k].count > ki[pick].count ||
            (ki[k].count == ki[pick].count && ki[k].first < ki[pick].first))
            pick = k;
    }
    if (pick == SIZE_MAX) {
        ok = 1;
        goto out;
    }
    b->t = malloc(ki[pick].count * sizeof *b->t);
    if (!b->t)
        goto out;
    uint64_t want = ((uint64_t)e[ki[pick].first].stack << 40) ^ e[ki[pick].first].size;
    for (size_t i = ki[pick].first; i < n && b->n < ki[pick].count; i++)
        if (e[i].action == OD_ACT_ALLOC && e[i].stack && (((uint64_t)e[i].stack << 40) ^ e[i].size) == want)
            b->t[b->n++] = i;
    double alloc_b = 0, freed_b = 0;
    for (size_t i = b->n ? b->t[0] : n; i < b->t[b->n - 1]; i++) {
        if (e[i].action == OD_ACT_ALLOC)
            alloc_b += (double)e[i].size;
        else if (e[i].action == OD_ACT_FREE_COMPLETED)
            freed_b += (double)e[i].size;
    }
    if (freed_b < 0.6 * alloc_b) {
        free(b->t);
        b->t = NULL;
        b->n = 0;
        ok = 1;
        goto out;
    }
    char site[400];
    int64_t sf, wf;
    od_stack_site(s, e[ki[pick].first].stack, &sf, &wf);
    od_frame_format(s, wf, site, sizeof site);
    snprintf(marker, msize, "%s (%llu B)", site, (unsigned long long)e[ki[pick].first].size);
    ok = 1;
out:
    od_u64map_free(&keys);
    free(ki);
    return ok;
}

/* ---------- survivors ---------- */

typedef struct {
    uint32_t stack;
    uint32_t window;
    uint64_t bytes;
} rec;

typedef struct {
    const char *site, *where;
    uint32_t window;
    uint64_t bytes;
} named_rec;

static int cmp_named(const void *pa, const void *pb)
{
    const named_rec *a = pa, *b = pb;
    int c = strcmp(a->site, b->site);
    if (c)
        return c;
    return a->window < b->window ? -1 : a->window > b->window;
}

static int cmp_survivor(const void *pa, const void *pb)
{
    const od_survivor *a = pa, *b = pb;
    if (a->bytes_per_iteration != b->bytes_per_iteration)
        return a->bytes_per_iteration > b->bytes_per_iteration ? -1 : 1;
    if (a->surviving_bytes != b->surviving_bytes)
        return a->surviving_bytes > b->surviving_bytes ? -1 : 1;
    return strcmp(a->site, b->site);
}

static int cmp_u64v(const void *pa, const void *pb)
{
    return cmp_u64(pa, pb);
}

static int survivors(const od_snapshot *s, const od_device_trace *tr, od_iterations *it)
{
    size_t n = it->n;
    if (n < 4)
        return 1;
    size_t w_lo = 1, w_hi = n - 3; /* judged windows [w_lo, w_hi] */
    it->judged = w_hi - w_lo + 1;
    const od_trace_entry *e = tr->entries;
    size_t last = it->items[n - 1].entry;
    od_u64map live = {0};
    rec *recs = NULL;
    named_rec *nr = NULL;
    char **names = NULL;
    uint64_t *per = NULL;
    size_t n_recs = 0;
    int ok = 0;
    for (size_t i = 0; i < last; i++) {
        if (e[i].action == OD_ACT_ALLOC) {
            if (!od_u64map_put(&live, e[i].addr, (uint32_t)i))
                goto out;
        } else if (e[i].action == OD_ACT_FREE_COMPLETED) {
            od_u64map_del(&live, e[i].addr);
        }
    }
    recs = malloc((live.n + 2) * sizeof *recs);
    if (!recs)
        goto out;
    size_t cur = 0;
    uint64_t addr_key;
    uint32_t idx;
    while (od_u64map_next(&live, &cur, &addr_key, &idx)) {
        /* The window holding entry idx. */
        size_t lo = 0, hi = n - 1; /* find the last boundary <= idx */
        if (idx < it->items[0].entry)
            continue;
        while (lo < hi) {
            size_t mid = (lo + hi + 1) / 2;
            if (it->items[mid].entry <= idx)
                lo = mid;
            else
                hi = mid - 1;
        }
        if (lo < w_lo || lo > w_hi)
            continue;
        recs[n_recs++] = (rec){e[idx].stack, (uint32_t)lo, od_round_request(e[idx].size)};
    }
    /* Names of the stacks involved. */
    names = calloc(2 * (n_recs ? n_recs : 1), sizeof *names);
    nr = malloc((n_recs ? n_recs : 1) * sizeof *nr);
    if (!names || !nr)
        goto out;
    for (size_t i = 0; i < n_recs; i++) {
        char buf[512];
        int64_t sf, wf;
        od_stack_site(s, recs[i].stack, &sf, &wf);
        names[2 * i] = strdup(od_frame_format(s, sf, buf, sizeof buf));
        names[2 * i + 1] = strdup(od_frame_format(s, wf, buf, sizeof buf));
        if (!names[2 * i] || !names[2 * i + 1])
            goto out;
        nr[i] = (named_rec){names[2 * i], names[2 * i + 1], recs[i].window, recs[i].bytes};
    }
    qsort(nr, n_recs, sizeof *nr, cmp_named);
    size_t n_sites = 0;
    for (size_t i = 0; i < n_recs; i++)
        if (i == 0 || strcmp(nr[i].site, nr[i - 1].site) != 0)
            n_sites++;
    it->survivors = calloc(n_sites ? n_sites : 1, sizeof *it->survivors);
    per = malloc(it->judged * sizeof *per);
    if (!it->survivors || !per)
        goto out;
    for (size_t i = 0; i < n_recs;) {
        size_t j = i;
        memset(per, 0, it->judged * sizeof *per);
        od_survivor *sv = &it->survivors[it->n_survivors];
        while (j < n_recs && strcmp(nr[j].site, nr[i].site) == 0) {
            per[nr[j].window - w_lo] += nr[j].bytes;
            sv->surviving_bytes += nr[j].bytes;
            j++;
        }
        for (size_t k = 0; k < it->judged; k++)
            sv->iterations += per[k] > 0;
        qsort(per, it->judged, sizeof *per, cmp_u64v);
        size_t m = it->judged;
        sv->bytes_per_iteration = m % 2 ? per[m / 2] : (per[m / 2 - 1] + per[m / 2]) / 2;
        sv->site = strdup(nr[i].site);
        sv->where = strdup(nr[i].where);
        it->n_survivors++;
        if (!sv->site || !sv->where)
            goto out;
        it->surviving_bytes_per_iteration += sv->bytes_per_iteration;
        i = j;
    }
    qsort(it->survivors, it->n_survivors, sizeof *it->survivors, cmp_survivor);
    ok = 1;
out:
    for (size_t i = 0; names && i < 2 * n_recs; i++)
        free(names[i]);
    free(names);
    free(nr);
    free(recs);
    free(per);
    od_u64map_free(&live);
    return ok;
}

/* ---------- the whole ---------- */

od_status od_iterations_find(const od_snapshot *s, int64_t device, int use_annotations,
                             od_iterations **out, od_error *err)
{
    *out = NULL;
    od_iterations *it = calloc(1, sizeof *it);
    if (!it)
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    it->device = device;
    const od_device_trace *tr = NULL;
    for (size_t i = 0; i < s->n_traces; i++)
        if (s->traces[i].device == device)
            tr = &s->traces[i];
    /* Entry indices are kept in 32 bits by the live map. */
    if (!s->has_traces || !tr || tr->n_entries < 3 || tr->n_entries >= UINT32_MAX) {
        *out = it;
        return OD_OK;
    }
    bounds b = {0};
    int ok = 1;
    if (use_annotations) {
        ok = from_annotations(s, tr, &b, it->marker, sizeof it->marker);
        if (ok && b.n >= 3) {
            it->source = OD_ITER_ANNOTATIONS;
            /* Times to entry indices: the first entry at or after each time. */
            size_t j = 0;
            for (size_t k = 0; k < b.n; k++) {
                while (j < tr->n_entries && tr->entries[j].time_us < b.t[k])
                    j++;
                b.t[k] = j;
            }
        } else {
            free(b.t);
            b = (bounds){0};
        }
    }
    if (ok && it->source == OD_ITER_NONE) {
        it->marker[0] = 0;
        ok = from_pattern(s, tr, &b, it->marker, sizeof it->marker);
        if (ok && b.n >= 3)
            it->source = OD_ITER_PATTERN;
    }
    if (!ok) {
        free(b.t);
        od_iterations_free(it);
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    }
    if (it->source == OD_ITER_NONE) {
        free(b.t);
        it->marker[0] = 0;
        *out = it;
        return OD_OK;
    }
    it->items = calloc(b.n, sizeof *it->items);
    if (!it->items) {
        free(b.t);
        od_iterations_free(it);
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    }
    /* Live bytes at each boundary. */
    uint64_t cur = od_trace_start_live_bytes(s, tr);
    size_t k = 0;
    for (size_t i = 0; i <= tr->n_entries && k < b.n; i++) {
        while (k < b.n && b.t[k] == i) {
            od_iteration *x = &it->items[k++];
            x->entry = i;
            x->time_us = i < tr->n_entries ? tr->entries[i].time_us : tr->entries[tr->n_entries - 1].time_us;
            x->live_bytes = cur;
        }
        if (i == tr->n_entries)
            break;
        const od_trace_entry *e = &tr->entries[i];
        if (e->action == OD_ACT_ALLOC)
            cur += od_round_request(e->size);
        else if (e->action == OD_ACT_FREE_COMPLETED)
            cur = cur >= od_round_request(e->size) ? cur - od_round_request(e->size) : 0;
    }
    it->n = k;
    free(b.t);
    if (it->n >= 3) {
        double *x = malloc(it->n * sizeof *x), *y = malloc(it->n * sizeof *y);
        if (!x || !y) {
            free(x), free(y);
            od_iterations_free(it);
            return od_fail(err, OD_ERR_NOMEM, "out of memory");
        }
        for (size_t i = 0; i < it->n; i++) {
            x[i] = (double)i;
            y[i] = (double)it->items[i].live_bytes;
        }
        od_series ser = {0};
        ser.n = it->n;
        ser.x = x;
        ser.y[OD_METRIC_ALLOCATED] = y;
        od_error e2;
        it->have_fit = od_trend_analyze(&ser, OD_METRIC_ALLOCATED, 0, &it->fit, &e2) == OD_OK;
        free(x);
        free(y);
    }
    if (!survivors(s, tr, it)) {
        od_iterations_free(it);
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    }
    *out = it;
    return OD_OK;
}

void od_iterations_free(od_iterations *it)
{
    if (!it)
        return;
    for (size_t i = 0; i < it->n_survivors; i++) {
        free(it->survivors[i].site);
        free(it->survivors[i].where);
    }
    free(it->survivors);
    free(it->items);
    free(it);
}
