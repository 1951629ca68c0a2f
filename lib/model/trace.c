/* trace.c - lifetimes, live bytes, the peak, reserved bytes and iteration boundaries of
 * one device's trace: the only walk of a trace outside the allocator replay. */
#include "model/trace.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/allocpolicy.h"
#include "base/mem.h"
#include "base/u64map.h"
#include "model/replay.h"
#include "model/sites.h"

#define NO_LIFE UINT32_MAX

const char *od_boundary_source_name(od_boundary_source s)
{
    switch (s) {
    case OD_BOUNDARY_NONE: return "none";
    case OD_BOUNDARY_ANNOTATIONS: return "annotations";
    case OD_BOUNDARY_PATTERN: return "pattern";
    }
    return "?";
}

const od_device_trace *od_trace_of(const od_snapshot *snap, int64_t device)
{
    /* The loader keeps traces[i].device == i (snapshot.h). */
    if (!snap->has_traces || device < 0 || (uint64_t)device >= snap->n_traces)
        return NULL;
    assert(snap->traces[device].device == device);
    return &snap->traces[device];
}

int od_trace_live_after(const od_lifetime *l, size_t index)
{
    int born = l->alloc_index == OD_TRACE_BEFORE || (index != SIZE_MAX && l->alloc_index <= index);
    int dead = l->free_index != OD_TRACE_NEVER && index != SIZE_MAX && l->free_index <= index;
    return born && !dead;
}

void od_trace_free(od_trace *t)
{
    if (!t)
        return;
    free(t->lives);
    free(t->before);
    free(t->entry_life);
    free(t->boundaries);
    free(t);
}

static int is_live_block(const od_block *b)
{
    return b->state == OD_BLOCK_ACTIVE_ALLOCATED || b->state == OD_BLOCK_ACTIVE_PENDING_FREE;
}

/* ---------- the cursor ---------- */

/* ---------- boundaries ---------- */

static int cmp_u64(const void *pa, const void *pb)
{
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    return a < b ? -1 : a > b;
}

static int annotation_matches(const od_annotation *a, const char *name, int64_t device, uint64_t lo, uint64_t hi)
{
    return a->stage && strcmp(a->stage, "START") == 0 && a->name && strcmp(a->name, name) == 0 &&
           (a->device == device || a->device < 0) && a->time_us >= lo && a->time_us <= hi;
}

/* START times of one annotation name inside the trace's time span, as boundary times.
 * Optimizer.step is preferred: it runs once per training step in every training loop that
 * has an optimizer; otherwise the name seen most often. */
static int from_annotations(od_trace *t, uint64_t **times, size_t *n_times)
{
    const od_snapshot *s = t->snap;
    if (!t->n_entries || !s->n_annotations)
        return 1;
    uint64_t lo = od_trace_at(t->entries, 0).time_us, hi = od_trace_at(t->entries, t->n_entries - 1).time_us;
    const char *best = NULL;
    size_t best_n = 0;
    int best_pref = 0;
    for (size_t i = 0; i < s->n_annotations; i++) {
        const od_annotation *a = &s->annotations[i];
        if (!a->stage || strcmp(a->stage, "START") != 0 || !a->name || (a->device != t->device && a->device >= 0))
            continue;
        if (best && strcmp(best, a->name) == 0)
            continue;
        /* Once an Optimizer.step name is counted, only another such name can win. */
        if (best_pref && strncmp(a->name, "Optimizer.step", 14) != 0)
            continue;
        int seen = 0; /* each name is counted at its first START only */
        for (size_t j = 0; j < i && !seen; j++)
            seen = s->annotations[j].name && s->annotations[j].stage && strcmp(s->annotations[j].stage, "START") == 0 &&
                   strcmp(s->annotations[j].name, a->name) == 0;
        if (seen)
            continue;
        size_t n = 0;
        for (size_t k = 0; k < s->n_annotations; k++)
            n += annotation_matches(&s->annotations[k], a->name, t->device, lo, hi);
        int pref = strncmp(a->name, "Optimizer.step", 14) == 0;
        if (n >= 3 && (pref > best_pref || (pref == best_pref && n > best_n))) {
            best = a->name;
            best_n = n;
            best_pref = pref;
        }
    }
    if (!best)
        return 1;
    uint64_t *b = malloc(best_n * sizeof *b);
    if (!b)
        return 0;
    size_t n = 0;
    for (size_t k = 0; k < s->n_annotations && n < best_n; k++)
        if (annotation_matches(&s->annotations[k], best, t->device, lo, hi))
            b[n++] = s->annotations[k].time_us;
    od_sort(b, n, sizeof *b, cmp_u64);
    snprintf(t->boundary_marker, sizeof t->boundary_marker, "%s", best);
    *times = b;
    *n_times = n;
    return 1;
}

/* The allocation that repeats once per loop iteration. For every (stack, size) key made 4
 * times or more, score = its smallest gap between two occurrences x (occurrences - 1):
 * a once-per-iteration allocation spans the trace with gaps of a whole iteration, while
 * per-layer ones (same stack for every layer) repeat within a phase, with small gaps,
 * and irregular ones have some small gap. Among keys scoring within 10% of the best,
 * the one made most often (then the first made) marks the boundaries. Allocations made
 * while building a model are no candidates (that repeats per layer, not per iteration),
 * and the windows found must give back at least 60% of what they allocate: an
 * iteration frees its temporaries, activations and gradients within it (the fixtures'
 * training steps free 92-100%, the leaking one included), while layers of one forward
 * keep their activations for backward (43% freed in a forward that died at its OOM) and
 * a model being built frees nothing. */
typedef struct {
    uint32_t count;
    size_t first, last, gap_min;
} keyinfo;

static uint64_t pattern_key(const od_trace_entry *e)
{
    return ((uint64_t)e->stack << 40) ^ e->size;
}

od_status od_trace_pattern_boundaries(const od_trace *t, size_t **out, size_t *n_out, char *marker, size_t msize)
{
    const od_snapshot *s = t->snap;
    size_t n = t->n_entries;
    od_u64map keys = {0};
    keyinfo *ki = NULL;
    *out = NULL;
    *n_out = 0;
    size_t n_keys = 0, cap = 0;
    int ok = 0;
    for (size_t i = 0; i < n; i++) {
        if (od_trace_action(t->entries, i) != OD_ACT_ALLOC)
            continue;
        od_trace_entry e = od_trace_at(t->entries, i);
        if (e.stack == 0)
            continue;
        uint64_t key = pattern_key(&e);
        uint32_t k;
        if (!od_u64map_get(&keys, key, &k)) {
            if (od_stack_is_init(s, e.stack))
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
    *out = NULL;
    *n_out = 0;
    size_t *b = malloc(ki[pick].count * sizeof *b), nb = 0;
    if (!b)
        goto out;
    od_trace_entry first = od_trace_at(t->entries, ki[pick].first);
    uint64_t want = pattern_key(&first);
    for (size_t i = ki[pick].first; i < n && nb < ki[pick].count; i++) {
        if (od_trace_action(t->entries, i) != OD_ACT_ALLOC)
            continue;
        od_trace_entry e = od_trace_at(t->entries, i);
        if (e.stack && pattern_key(&e) == want)
            b[nb++] = i;
    }
    double alloc_b = 0, freed_b = 0;
    for (size_t i = b[0]; i < b[nb - 1]; i++) {
        od_trace_entry e = od_trace_at(t->entries, i);
        if (e.action == OD_ACT_ALLOC)
            alloc_b += (double)e.size;
        else if (e.action == OD_ACT_FREE_COMPLETED)
            freed_b += (double)e.size;
    }
    if (freed_b < 0.6 * alloc_b) {
        free(b);
        ok = 1;
        goto out;
    }
    char site[400];
    int64_t sf, wf;
    od_stack_site(s, first.stack, &sf, &wf);
    od_frame_format(s, wf, site, sizeof site);
    snprintf(marker, msize, "%s (%llu B)", site, (unsigned long long)first.size);
    *out = b;
    *n_out = nb;
    ok = 1;
out:
    od_u64map_free(&keys);
    free(ki);
    return ok ? OD_OK : OD_ERR_NOMEM;
}

static int find_boundaries(od_trace *t)
{
    uint64_t *times = NULL;
    size_t n_times = 0;
    if (t->n_entries < 3)
        return 1;
    if (!from_annotations(t, &times, &n_times))
        return 0;
    if (n_times >= 3) {
        t->boundaries = malloc(n_times * sizeof *t->boundaries);
        if (!t->boundaries) {
            free(times);
            return 0;
        }
        /* Times to entry indices: the first entry at or after each time. */
        size_t j = 0;
        for (size_t k = 0; k < n_times; k++) {
            while (j < t->n_entries && od_trace_at(t->entries, j).time_us < times[k])
                j++;
            t->boundaries[k] = j;
        }
        t->n_boundaries = n_times;
        t->boundary_source = OD_BOUNDARY_ANNOTATIONS;
        free(times);
        return 1;
    }
    free(times);
    t->boundary_marker[0] = 0;
    size_t *b = NULL, nb = 0;
    if (od_trace_pattern_boundaries(t, &b, &nb, t->boundary_marker, sizeof t->boundary_marker) != OD_OK)
        return 0;
    if (nb >= 3) {
        t->boundaries = b;
        t->n_boundaries = nb;
        t->boundary_source = OD_BOUNDARY_PATTERN;
    } else {
        free(b);
        t->boundary_marker[0] = 0;
    }
    return 1;
}

/* ---------- building ---------- */

typedef struct {
    od_trace *t;
    size_t cap, cap_before;
} builder;

/* A lifetime allocated at entry alloc_index; NO_LIFE when out of memory. */
static uint32_t add_life(builder *b, uint32_t alloc_index, uint64_t block_bytes)
{
    if (b->t->n_lives == b->cap &&
        !od_grow((void **)&b->t->lives, &b->cap, b->t->n_lives + 1, sizeof *b->t->lives))
        return NO_LIFE;
    b->t->lives[b->t->n_lives] = (od_lifetime){block_bytes, alloc_index, OD_TRACE_NEVER, OD_TRACE_NEVER, 0};
    return (uint32_t)b->t->n_lives++;
}

/* A lifetime that began before the trace. */
static uint32_t add_before(builder *b, od_life_origin o, uint64_t block_bytes)
{
    od_trace *t = b->t;
    if (t->n_before >= UINT32_MAX ||
        !od_grow((void **)&t->before, &b->cap_before, t->n_before + 1, sizeof *t->before))
        return NO_LIFE;
    uint32_t li = add_life(b, OD_TRACE_BEFORE, block_bytes);
    if (li == NO_LIFE)
        return NO_LIFE;
    t->before[t->n_before] = o;
    t->lives[li].before = (uint32_t)t->n_before++;
    return li;
}

static od_status build_lives(od_trace *t, const uint32_t *block_units, od_error *err)
{
    const od_snapshot *s = t->snap;
    size_t n = t->n_entries;
    builder b = {t, 0, 0};
    od_u64map latest = {0}; /* at the end: address -> its latest lifetime */
    uint32_t *by_addr = NULL; /* during the walk: address number -> its latest lifetime */
    od_status rc = OD_ERR_NOMEM;
    if (n) {
        size_t na = t->entries->n_addrs;
        if (!(by_addr = malloc((na ? na : 1) * sizeof *by_addr)))
            goto out;
        memset(by_addr, 0xff, na * sizeof *by_addr); /* NO_LIFE */
        size_t cap_el = 0, allocs = 0;
        if (!od_grow((void **)&t->entry_life, &cap_el, n, sizeof *t->entry_life))
            goto out;
        /* One lifetime per alloc, and a few from before the trace: sized once, not doubled. */
        for (size_t i = 0; i < n; i++)
            allocs += od_trace_action(t->entries, i) == OD_ACT_ALLOC;
        if (!od_grow((void **)&t->lives, &b.cap, allocs + 64, sizeof *t->lives))
            goto out;
    }
    for (size_t i = 0; i < n; i++) {
        od_trace_entry xe = od_trace_at(t->entries, i);
        const od_trace_entry *x = &xe;
        uint32_t li = NO_LIFE;
        if (x->action == OD_ACT_ALLOC) {
            uint64_t blk = block_units && block_units[i] ? (uint64_t)block_units[i] * OD_SIM_MIN_BLOCK
                                                         : od_round_request(x->size);
            li = add_life(&b, (uint32_t)i, blk);
            if (li == NO_LIFE)
                goto out;
            uint32_t *v = &by_addr[od_trace_addr_id(t->entries, i)];
            if (*v != NO_LIFE && t->lives[*v].free_index == OD_TRACE_NEVER)
                t->lives[*v].free_index = (uint32_t)i; /* allocated again without a free: replaced */
            *v = li;
        } else if (x->action == OD_ACT_FREE_REQUESTED || x->action == OD_ACT_FREE_COMPLETED) {
            uint32_t *v = &by_addr[od_trace_addr_id(t->entries, i)];
            if ((li = *v) == NO_LIFE) {
                /* Freed before the trace allocated it: live since before the trace began. */
                li = add_before(&b, (od_life_origin){x->addr, x->size, 0}, od_round_request(x->size));
                if (li == NO_LIFE)
                    goto out;
                *v = li;
            }
            od_lifetime *l = &t->lives[li];
            if (x->action == OD_ACT_FREE_REQUESTED && l->free_req_index == OD_TRACE_NEVER &&
                l->free_index == OD_TRACE_NEVER)
                l->free_req_index = (uint32_t)i;
            else if (x->action == OD_ACT_FREE_COMPLETED && l->free_index == OD_TRACE_NEVER)
                l->free_index = (uint32_t)i;
            else
                li = NO_LIFE; /* a second free of one block: inconsistent, ignored */
        }
        t->entry_life[i] = li;
    }
    /* Blocks live at the end: the trace's own (their real size now known, unless the replay
     * gave it), or from before the trace when the trace never touched their address. */
    for (size_t a = 0; n && a < t->entries->n_addrs; a++)
        if (by_addr[a] != NO_LIFE && !od_u64map_put(&latest, od_life_of(t, &t->lives[by_addr[a]]).addr, by_addr[a]))
            goto out;
    for (size_t i = 0; i < s->n_segments; i++) {
        const od_segment *seg = &s->segments[i];
        if (seg->device != t->device)
            continue;
        for (size_t k = 0; k < seg->n_blocks; k++) {
            const od_block *bl = &s->blocks[seg->first_block + k];
            if (!is_live_block(bl))
                continue;
            uint32_t li;
            if (od_u64map_get(&latest, bl->address, &li)) {
                od_lifetime *l = &t->lives[li];
                if (l->free_index == OD_TRACE_NEVER && !block_units && bl->size >= od_life_of(t, l).requested_bytes)
                    l->block_bytes = bl->size;
                continue;
            }
            if (add_before(&b, (od_life_origin){bl->address, bl->requested_size, bl->stack}, bl->size) == NO_LIFE)
                goto out;
        }
    }
    rc = OD_OK;
out:
    od_u64map_free(&latest);
    free(by_addr);
    if (rc != OD_OK)
        od_fail(err, rc, "out of memory");
    return rc;
}

od_status od_trace_build(const od_snapshot *snap, int64_t device, const uint32_t *block_units, od_trace **out,
                         od_error *err)
{
    *out = NULL;
    od_trace *t = calloc(1, sizeof *t);
    if (!t)
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    t->snap = snap;
    t->device = device;
    t->blocks_from_replay = block_units != NULL;
    const od_device_trace *dt = od_trace_of(snap, device);
    if (dt) {
        t->has_trace = 1;
        t->entries = dt;
        t->n_entries = dt->n_entries;
    }
    if (t->n_entries >= UINT32_MAX - 1) {
        size_t n = t->n_entries;
        od_trace_free(t);
        return od_fail(err, OD_ERR_LIMIT, "trace of %zu entries: at most 2^32 - 2 are read", n);
    }
    od_status rc = build_lives(t, t->has_trace ? block_units : NULL, err);
    if (rc != OD_OK) {
        od_trace_free(t);
        return rc;
    }
    /* What was live before the trace began, and the reserve then. */
    int overflow = 0;
    for (size_t i = 0; i < t->n_lives; i++)
        if (t->lives[i].alloc_index == OD_TRACE_BEFORE) {
            overflow |= __builtin_add_overflow(t->start_requested_bytes, od_life_of(t, &t->lives[i]).requested_bytes,
                                               &t->start_requested_bytes);
            overflow |= __builtin_add_overflow(t->start_block_bytes, t->lives[i].block_bytes, &t->start_block_bytes);
        }
    t->complete = t->start_requested_bytes == 0 && t->start_block_bytes == 0;
    uint64_t reserved_end = 0;
    for (size_t i = 0; i < snap->n_segments; i++)
        if (snap->segments[i].device == device)
            overflow |= __builtin_add_overflow(reserved_end, snap->segments[i].total_size, &reserved_end);
    /* Undo the trace's segment events, newest first: the reserve was never negative. */
    int64_t res = reserved_end > (uint64_t)INT64_MAX / 2 ? INT64_MAX / 2 : (int64_t)reserved_end;
    t->has_reserved = 1;
    for (size_t i = t->n_entries; i-- > 0;) {
        od_trace_entry xe = od_trace_at(t->entries, i);
        const od_trace_entry *x = &xe;
        int64_t sz = x->size > (uint64_t)INT64_MAX / 4 ? INT64_MAX / 4 : (int64_t)x->size;
        if (x->action == OD_ACT_SEGMENT_ALLOC || x->action == OD_ACT_SEGMENT_MAP)
            res -= sz;
        else if (x->action == OD_ACT_SEGMENT_FREE || x->action == OD_ACT_SEGMENT_UNMAP)
            res += sz;
        if (res < 0 || res > INT64_MAX / 2)
            t->has_reserved = 0;
        if (res > INT64_MAX / 2)
            res = INT64_MAX / 2;
    }
    t->start_reserved_bytes = res > 0 ? (uint64_t)res : 0;
    if (overflow) {
        od_trace_free(t);
        return od_fail(err, OD_ERR_LIMIT, "sizes in the snapshot add up to more than 2^64 bytes");
    }
    /* The peaks and the highest reserve: one walk with the cursor. */
    od_trace_cursor c;
    od_trace_cursor_init(t, &c);
    t->peak_block_bytes = c.live_block_bytes;
    t->peak_requested_at_peak = c.live_requested_bytes;
    t->peak_requested_bytes = c.live_requested_bytes;
    t->max_reserved_bytes = c.reserved_bytes;
    if (t->n_entries) {
        t->peak_time_us = od_trace_at(t->entries, 0).time_us;
        t->peak_requested_time_us = t->peak_time_us;
    }
    for (size_t i = 0; i < t->n_entries; i++) {
        od_trace_cursor_step(t, &c, i);
        if (c.reserved_bytes > t->max_reserved_bytes)
            t->max_reserved_bytes = c.reserved_bytes;
        if (od_trace_action(t->entries, i) != OD_ACT_ALLOC)
            continue;
        if (c.live_block_bytes > t->peak_block_bytes) {
            t->has_peak = 1;
            t->peak_index = i;
            t->peak_time_us = od_trace_at(t->entries, i).time_us;
            t->peak_block_bytes = c.live_block_bytes;
            t->peak_requested_at_peak = c.live_requested_bytes;
        }
        if (c.live_requested_bytes > t->peak_requested_bytes) {
            t->has_peak_requested = 1;
            t->peak_requested_index = i;
            t->peak_requested_time_us = od_trace_at(t->entries, i).time_us;
            t->peak_requested_bytes = c.live_requested_bytes;
        }
    }
    if (!find_boundaries(t)) {
        od_trace_free(t);
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    }
    *out = t;
    return OD_OK;
}

od_status od_trace_open(const od_snapshot *snap, int64_t device, od_trace **out, od_error *err)
{
    *out = NULL;
    od_trace *plain = NULL;
    od_status rc = od_trace_build(snap, device, NULL, &plain, err);
    if (rc != OD_OK || !plain->has_trace || !plain->complete || !plain->n_entries)
        return *out = plain, rc;
    /* A complete trace: replay it under the run's own settings; when the model reproduces
     * every recorded segment event, its block sizes are the allocator's. */
    uint32_t *blocks = calloc(plain->n_entries, sizeof *blocks);
    od_replay_result *res = malloc(sizeof *res);
    if (!blocks || !res) {
        free(blocks);
        free(res);
        od_trace_free(plain);
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    }
    /* A run that died of OOM under a per-process cap cannot be replayed without one; the
     * cap was at least the most the run ever reserved, and every request the run served
     * fit under it, so that figure reproduces the run whenever anything does. The
     * verification decides, never the guess. */
    int oom = 0;
    for (size_t i = 0; i < plain->n_entries && !oom; i++)
        oom = od_trace_action(plain->entries, i) == OD_ACT_OOM;
    uint64_t caps[2] = {0, plain->max_reserved_bytes};
    size_t n = plain->n_entries;
    /* Not held through the replay and the second build: a ten-million-entry trace would
     * hold two models at once. Built again in the rare case the replay does not verify. */
    od_trace_free(plain);
    plain = NULL;
    for (int k = 0; k < (oom ? 2 : 1); k++) {
        od_replay_opts o;
        memset(&o, 0, sizeof o);
        od_replay_config_from_snapshot(snap, &o.cfg);
        o.cfg.allowed_bytes = caps[k];
        o.device = device;
        o.block_units_out = blocks;
        memset(blocks, 0, n * sizeof *blocks);
        od_error e2;
        rc = od_replay_snapshot(snap, &o, res, &e2);
        if (rc != OD_OK || od_replay_verified(res))
            break;
    }
    int verified = rc == OD_OK && od_replay_verified(res);
    free(res);
    rc = od_trace_build(snap, device, verified ? blocks : NULL, out, err);
    free(blocks);
    return rc;
}

uint64_t od_trace_peak_without(const od_trace *t, const uint8_t *drop, size_t *at)
{
    size_t n = t->n_entries;
    int64_t *delta = calloc(n + 1, sizeof *delta);
    uint64_t live = 0, peak = 0;
    if (at)
        *at = SIZE_MAX;
    if (!delta)
        return 0;
    for (size_t i = 0; i < t->n_lives; i++) {
        const od_lifetime *l = &t->lives[i];
        if (drop && drop[i])
            continue;
        if (l->alloc_index == OD_TRACE_BEFORE)
            live += l->block_bytes;
        else if (l->alloc_index < n)
            delta[l->alloc_index] += (int64_t)l->block_bytes;
        if (l->free_index != OD_TRACE_NEVER && l->free_index < n)
            delta[l->free_index] -= (int64_t)l->block_bytes;
    }
    peak = live;
    for (size_t k = 0; k < n; k++) {
        live = (uint64_t)((int64_t)live + delta[k]);
        if (live > peak) {
            peak = live;
            if (at)
                *at = k;
        }
    }
    free(delta);
    return peak;
}
