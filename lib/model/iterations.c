/* iterations.c - iteration boundaries, live memory per iteration, surviving sites. */
#include "model/iterations.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "model/sites.h"

const char *od_iter_source_name(od_iter_source s)
{
    return od_boundary_source_name((od_boundary_source)s);
}

static int cmp_u64(const void *pa, const void *pb)
{
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    return a < b ? -1 : a > b;
}

/* ---------- survivors ---------- */

typedef struct {
    uint32_t stack;
    uint32_t window;
    uint64_t bytes;
    uint32_t free_index, release_index;
} rec;

typedef struct {
    const char *site, *where;
    uint32_t window;
    uint64_t bytes;
    uint32_t free_index, release_index;
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

/* Allocations made in the judged iterations and still live at the last boundary, by
 * site: the bytes per iteration (median over the judged ones), and how much of them the
 * trace still holds at its end, or where it released them. */
/* Each survivor's held_at_end_bytes: every block made at its site that the trace never
 * frees, whichever iteration made it (the warm-up's and the last ones' too). The site of a
 * stack is asked once. */
static int held_at_end(const od_trace *t, od_iterations *it)
{
    const od_snapshot *s = t->snap;
    if (!it->n_survivors)
        return 1;
    uint32_t *which = calloc((size_t)s->n_stacks + 1, sizeof *which); /* 0: not asked; k + 1; UINT32_MAX: none */
    if (!which)
        return 0;
    for (size_t i = 0; i < t->n_lives; i++) {
        const od_lifetime *l = &t->lives[i];
        if (l->free_index != OD_TRACE_NEVER || l->alloc_index == OD_TRACE_BEFORE)
            continue;
        uint32_t st = od_life_of(t, l).stack;
        if (!st || st > s->n_stacks)
            continue;
        if (!which[st]) {
            char buf[512];
            int64_t sf, wf;
            od_stack_site(s, st, &sf, &wf);
            od_frame_format(s, sf, buf, sizeof buf);
            which[st] = UINT32_MAX;
            for (size_t k = 0; k < it->n_survivors; k++)
                if (strcmp(it->survivors[k].site, buf) == 0)
                    which[st] = (uint32_t)k + 1;
        }
        if (which[st] != UINT32_MAX)
            it->survivors[which[st] - 1].held_at_end_bytes += l->block_bytes;
    }
    free(which);
    return 1;
}

static int survivors(const od_trace *t, od_iterations *it)
{
    const od_snapshot *s = t->snap;
    size_t n = it->n;
    if (n < 4)
        return 1;
    size_t w_lo = 1, w_hi = n - 3; /* judged windows [w_lo, w_hi] */
    it->judged = w_hi - w_lo + 1;
    size_t last = it->items[n - 1].entry;
    rec *recs = NULL;
    named_rec *nr = NULL;
    char **names = NULL;
    uint64_t *per = NULL;
    size_t n_recs = 0, cap_recs = 0;
    int ok = 0;
    for (size_t i = 0; i < t->n_lives; i++) {
        const od_lifetime *l = &t->lives[i];
        if (l->alloc_index == OD_TRACE_BEFORE || l->alloc_index >= last || !od_trace_live_after(l, last - 1))
            continue;
        /* The window holding its alloc: the last boundary <= it. */
        size_t lo = 0, hi = n - 1;
        if (l->alloc_index < it->items[0].entry)
            continue;
        while (lo < hi) {
            size_t mid = (lo + hi + 1) / 2;
            if (it->items[mid].entry <= l->alloc_index)
                lo = mid;
            else
                hi = mid - 1;
        }
        if (lo < w_lo || lo > w_hi)
            continue;
        if (!od_grow((void **)&recs, &cap_recs, n_recs + 1, sizeof *recs))
            goto out;
        recs[n_recs++] = (rec){od_life_of(t, l).stack, (uint32_t)lo, l->block_bytes, l->free_index,
                               l->free_req_index != OD_TRACE_NEVER ? l->free_req_index : l->free_index};
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
        nr[i] = (named_rec){names[2 * i], names[2 * i + 1], recs[i].window, recs[i].bytes, recs[i].free_index,
                            recs[i].release_index};
    }
    od_sort(nr, n_recs, sizeof *nr, cmp_named);
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
        sv->released_index = SIZE_MAX;
        while (j < n_recs && strcmp(nr[j].site, nr[i].site) == 0) {
            per[nr[j].window - w_lo] += nr[j].bytes;
            sv->surviving_bytes += nr[j].bytes;
            if (nr[j].free_index == OD_TRACE_NEVER)
                sv->judged_held_bytes += nr[j].bytes;
            else if (sv->released_index == SIZE_MAX || nr[j].release_index < sv->released_index)
                sv->released_index = nr[j].release_index;
            j++;
        }
        for (size_t k = 0; k < it->judged; k++)
            sv->iterations += per[k] > 0;
        od_sort(per, it->judged, sizeof *per, cmp_u64);
        size_t m = it->judged;
        sv->bytes_per_iteration = m % 2 ? per[m / 2] : (per[m / 2 - 1] + per[m / 2]) / 2;
        uint32_t released_stack =
            sv->released_index != SIZE_MAX ? od_trace_at(t->entries, sv->released_index).stack : 0;
        if (released_stack) {
            char buf[512];
            int64_t sf, wf;
            od_stack_site(s, released_stack, &sf, &wf);
            sv->released_at = strdup(od_frame_format(s, sf, buf, sizeof buf));
        } else {
            sv->released_at = strdup(sv->released_index == SIZE_MAX ? "" : OD_SITE_NO_FRAMES);
        }
        sv->site = strdup(nr[i].site);
        sv->where = strdup(nr[i].where);
        it->n_survivors++;
        if (!sv->site || !sv->where || !sv->released_at)
            goto out;
        it->surviving_bytes_per_iteration += sv->bytes_per_iteration;
        if (sv->judged_held_bytes)
            it->held_bytes_per_iteration += sv->bytes_per_iteration;
        i = j;
    }
    od_sort(it->survivors, it->n_survivors, sizeof *it->survivors, cmp_survivor);
    ok = held_at_end(t, it);
out:
    for (size_t i = 0; names && i < 2 * n_recs; i++)
        free(names[i]);
    free(names);
    free(nr);
    free(recs);
    free(per);
    return ok;
}

/* ---------- the whole ---------- */

od_status od_iterations_find(const od_trace *t, int use_annotations, od_iterations **out, od_error *err)
{
    *out = NULL;
    od_iterations *it = calloc(1, sizeof *it);
    if (!it)
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    it->device = t->device;
    if (!t->has_trace || t->n_entries < 3) {
        *out = it;
        return OD_OK;
    }
    const size_t *b = t->boundaries;
    size_t nb = t->n_boundaries;
    size_t *own = NULL;
    it->source = (od_iter_source)t->boundary_source;
    snprintf(it->marker, sizeof it->marker, "%s", t->boundary_marker);
    if (!use_annotations && t->boundary_source == OD_BOUNDARY_ANNOTATIONS) {
        it->marker[0] = 0;
        if (od_trace_pattern_boundaries(t, &own, &nb, it->marker, sizeof it->marker) != OD_OK) {
            od_iterations_free(it);
            return od_fail(err, OD_ERR_NOMEM, "out of memory");
        }
        b = own;
        it->source = nb >= 3 ? OD_ITER_PATTERN : OD_ITER_NONE;
    }
    if (it->source == OD_ITER_NONE || nb < 3) {
        free(own);
        it->source = OD_ITER_NONE;
        it->marker[0] = 0;
        *out = it;
        return OD_OK;
    }
    it->items = calloc(nb, sizeof *it->items);
    if (!it->items) {
        free(own);
        od_iterations_free(it);
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    }
    /* Live block bytes at each boundary (just before the entry it falls on). */
    od_trace_cursor c;
    od_trace_cursor_init(t, &c);
    size_t k = 0;
    for (size_t i = 0; i <= t->n_entries; i++) {
        while (k < nb && b[k] == i) {
            od_iteration *x = &it->items[k++];
            x->entry = i;
            x->time_us = od_trace_at(t->entries, i < t->n_entries ? i : t->n_entries - 1).time_us;
            x->live_bytes = x->peak_bytes = c.live_block_bytes;
            x->peak_entry = i;
        }
        if (i == t->n_entries)
            break;
        od_trace_cursor_step(t, &c, i);
        if (k && c.live_block_bytes > it->items[k - 1].peak_bytes) {
            it->items[k - 1].peak_bytes = c.live_block_bytes;
            it->items[k - 1].peak_entry = i;
        }
    }
    it->n = k;
    free(own);
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
    if (!survivors(t, it)) {
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
        free(it->survivors[i].released_at);
    }
    free(it->survivors);
    free(it->items);
    free(it);
}

/* ---------- inference ---------- */

int od_iterations_leak(const od_iterations *it)
{
    if (!it || it->source == OD_ITER_NONE || !it->have_fit || it->judged == 0)
        return 0;
    if (it->fit.verdict != OD_TREND_LEAK || it->fit.growth_per_x <= 0)
        return 0;
    double s = (double)it->held_bytes_per_iteration;
    return s >= 1024.0 * 1024.0 && s >= 0.25 * it->fit.growth_per_x;
}

int od_iterations_verdict(const od_iterations *it, int *bounded)
{
    if (bounded)
        *bounded = 0;
    if (!it || !it->have_fit)
        return -1;
    if (it->fit.verdict == OD_TREND_LEAK && !od_iterations_leak(it)) {
        if (bounded)
            *bounded = 1;
        return OD_TREND_STABLE;
    }
    return (int)it->fit.verdict;
}

/* A frame of generation: generate() or transformers' decoding loops, its generation
 * package, or its KV cache. */
static int has_generate_frame(const od_snapshot *s, uint32_t stack)
{
    static const char *const loops[] = {"generate", "_sample", "_beam_search", "_assisted_decoding",
                                        "_contrastive_search", "_dola_decoding", NULL};
    uint32_t n;
    const uint32_t *fr = od_snapshot_stack(s, stack, &n);
    for (uint32_t i = 0; i < n; i++) {
        const od_frame *f = &s->frames[fr[i]];
        for (const char *const *l = loops; f->name && *l; l++)
            if (strcmp(f->name, *l) == 0)
                return 1;
        if (f->filename && (strstr(f->filename, "/generation/utils.py") || strstr(f->filename, "cache_utils")))
            return 1;
    }
    return 0;
}

void od_inference_find(const od_trace *t, const od_iterations *it, od_inference *out)
{
    memset(out, 0, sizeof *out);
    if (!t->has_trace || !t->n_entries || t->boundary_source == OD_BOUNDARY_ANNOTATIONS)
        return;
    const od_snapshot *s = t->snap;
    int generate = 0;
    uint32_t checked = UINT32_MAX;
    for (size_t i = 0; i < t->n_entries; i++) {
        if (od_trace_action(t->entries, i) != OD_ACT_ALLOC)
            continue;
        od_trace_entry ee = od_trace_at(t->entries, i);
        const od_trace_entry *e = &ee;
        if (e->stack == 0)
            return; /* made without Python frames: backward, so training */
        if (!generate && e->stack != checked) {
            generate = has_generate_frame(s, e->stack);
            checked = e->stack;
        }
    }
    if (!generate)
        return;
    out->is_inference = 1;
    if (!it || it->n < 3)
        return;
    out->decode_steps = it->n - 1;
    /* Bytes allocated per step, and whether they grow with the position. */
    size_t n = it->n - 1, grow = 0;
    uint64_t first = 0, last = 0, prev = 0;
    for (size_t k = 0; k < n; k++) {
        uint64_t sum = 0;
        for (size_t i = it->items[k].entry; i < it->items[k + 1].entry; i++)
            if (od_trace_action(t->entries, i) == OD_ACT_ALLOC)
                sum += od_trace_at(t->entries, i).size;
        if (k == 0)
            first = sum;
        else if (sum > prev)
            grow++;
        prev = last = sum;
    }
    out->step_growth_ratio = first ? (double)last / (double)first : 0;
    int volume_grows = n >= 3 && grow >= (n - 1) * 8 / 10 && last > first + first / 20;
    /* A cache keeps what each step adds: live memory at the step boundaries climbs on a
     * straight line (a few KiB a step for a small model is still a cache: no growth floor
     * applies here, unlike a leak's). */
    double g = it->have_fit ? it->fit.growth_per_x : 0;
    int keeps = it->have_fit && g >= 512 && it->fit.r2 >= 0.9;
    /* Recomputing the whole sequence makes each step allocate the activations of every
     * position again: the bytes allocated per step grow by far more than live memory does
     * (a DynamicCache's torch.cat copies the cache each step, so its volume grows by about
     * what the cache keeps). */
    double dv = n > 1 ? ((double)last - (double)first) / (double)(n - 1) : 0;
    out->recomputes_each_step = volume_grows && dv > 4.0 * (keeps ? g : 0.0) && dv > 0;
    out->kv_cache_bytes_per_token = keeps && !out->recomputes_each_step ? (uint64_t)(g + 0.5) : 0;
    /* Weights: made while the model was built or loaded (init frames), or live before the
     * trace with no frames of their own (a block live at the end keeps the frames that
     * made it), and live through the last decode step. */
    size_t last_step = it->items[it->n - 1].entry;
    for (size_t i = 0; i < t->n_lives; i++) {
        const od_lifetime *l = &t->lives[i];
        uint32_t stack = od_life_of(t, l).stack;
        int before = l->alloc_index == OD_TRACE_BEFORE && stack == 0;
        int loaded = l->alloc_index != OD_TRACE_BEFORE && stack && od_stack_is_init(s, stack);
        if ((before || loaded) && (l->free_index == OD_TRACE_NEVER || l->free_index >= last_step))
            out->weights_bytes += l->block_bytes;
    }
}
