/* replay.c - drive allocsim with a recorded trace and hold the model to the recording. */
#include "model/replay.h"

#include <stdlib.h>
#include <string.h>

#include "base/mem.h"

/* ---- a small u64 -> u64 map (recorded address -> model address) ---- */

typedef struct {
    uint64_t *k, *v;
    size_t mask, n;
} amap;

static size_t aslot(uint64_t a, size_t mask)
{
    a ^= a >> 31;
    a *= 0x9e3779b97f4a7c15ull;
    a ^= a >> 29;
    return (size_t)a & mask;
}

static int amap_init(amap *m, size_t cap)
{
    size_t n = 1024;
    while (n < cap * 2) n *= 2;
    m->k = calloc(n, sizeof *m->k);
    m->v = calloc(n, sizeof *m->v);
    m->mask = n - 1;
    m->n = 0;
    return (m->k && m->v) ? 0 : -1;
}

static void amap_free(amap *m)
{
    free(m->k);
    free(m->v);
}

/* keys are never 0 (no block lives at address 0); 0 marks an empty slot */
static int amap_put(amap *m, uint64_t k, uint64_t v)
{
    if ((m->n + 1) * 2 > m->mask + 1) {
        amap o = *m;
        if (amap_init(m, (o.mask + 1))) { *m = o; return -1; }
        for (size_t i = 0; i <= o.mask; i++)
            if (o.k[i]) amap_put(m, o.k[i], o.v[i]);
        amap_free(&o);
    }
    size_t j = aslot(k, m->mask);
    while (m->k[j] && m->k[j] != k) j = (j + 1) & m->mask;
    if (!m->k[j]) m->n++;
    m->k[j] = k;
    m->v[j] = v;
    return 0;
}

static int amap_get(const amap *m, uint64_t k, uint64_t *v)
{
    size_t j = aslot(k, m->mask);
    while (m->k[j]) {
        if (m->k[j] == k) { *v = m->v[j]; return 1; }
        j = (j + 1) & m->mask;
    }
    return 0;
}

static void amap_del(amap *m, uint64_t k)
{
    size_t mask = m->mask, j = aslot(k, mask);
    while (m->k[j] && m->k[j] != k) j = (j + 1) & mask;
    if (!m->k[j]) return;
    m->k[j] = 0;
    m->n--;
    size_t i = (j + 1) & mask;
    while (m->k[i]) {
        size_t h = aslot(m->k[i], mask);
        int move = (j <= i) ? (h <= j || h > i) : (h <= j && h > i);
        if (move) {
            m->k[j] = m->k[i];
            m->v[j] = m->v[i];
            m->k[i] = 0;
            j = i;
        }
        i = (i + 1) & mask;
    }
}

/* ---- replay state ---- */

typedef struct {
    uint64_t addr, size, pool;
} range;

typedef struct {
    const od_device_trace *e;
    size_t n;
    size_t *rec;          /* trace indices of recorded segment events */
    size_t n_rec, rc;     /* rc: next recorded event to compare with */
    od_replay_result *res;
    const od_allocsim_config *cfg;
    range *live;          /* model's live non-expandable segments, sorted by address */
    size_t n_live, cap_live;
    const uint64_t *pool; /* per entry: the pool an alloc / oom entry draws from, or NULL */
    const uint8_t *capt;  /* per entry: a capture is underway, or NULL */
    uint32_t *block_out;  /* opts->block_units_out */
    int nomem;
} rctx;

static int is_seg(uint8_t a)
{
    return a == OD_ACT_SEGMENT_ALLOC || a == OD_ACT_SEGMENT_FREE || a == OD_ACT_SEGMENT_MAP ||
           a == OD_ACT_SEGMENT_UNMAP;
}

static od_seg_kind seg_kind(uint8_t a)
{
    switch (a) {
    case OD_ACT_SEGMENT_ALLOC: return OD_SEG_ALLOC;
    case OD_ACT_SEGMENT_FREE: return OD_SEG_FREE;
    case OD_ACT_SEGMENT_MAP: return OD_SEG_MAP;
    default: return OD_SEG_UNMAP;
    }
}

static size_t live_find(const rctx *c, uint64_t addr)
{
    size_t lo = 0, hi = c->n_live;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (c->live[mid].addr < addr) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static int live_overlaps(const rctx *c, uint64_t addr, uint64_t size)
{
    size_t i = live_find(c, addr);
    if (i < c->n_live && c->live[i].addr < addr + size) return 1;
    if (i > 0 && c->live[i - 1].addr + c->live[i - 1].size > addr) return 1;
    return 0;
}

static void on_event(void *vc, const od_seg_event *ev)
{
    rctx *c = vc;
    od_replay_result *r = c->res;
    r->seg_simulated++;
    if (ev->kind == OD_SEG_ALLOC) {
        if (c->n_live == c->cap_live) {
            size_t nc = c->cap_live ? c->cap_live * 2 : 64;
            range *v = realloc(c->live, nc * sizeof *v);
            if (!v) { c->nomem = 1; return; }
            c->live = v;
            c->cap_live = nc;
        }
        size_t i = live_find(c, ev->addr);
        memmove(c->live + i + 1, c->live + i, (c->n_live - i) * sizeof *c->live);
        c->live[i] = (range){ ev->addr, ev->size, ev->pool };
        c->n_live++;
    } else if (ev->kind == OD_SEG_FREE) {
        size_t i = live_find(c, ev->addr);
        if (i < c->n_live && c->live[i].addr == ev->addr) {
            memmove(c->live + i, c->live + i + 1, (c->n_live - i - 1) * sizeof *c->live);
            c->n_live--;
        }
    }
    /* positional comparison with the recording: kind and size, address counted apart */
    if (c->rc < c->n_rec) {
        od_trace_entry t_v = od_trace_at(c->e, c->rec[c->rc]);
        const od_trace_entry *t = &t_v;
        if (seg_kind(t->action) == ev->kind && t->size == ev->size) {
            r->seg_matched++;
            if (t->addr == ev->addr) r->seg_addr_matched++;
        } else if (!r->has_mismatch) {
            r->has_mismatch = 1;
            r->mismatch_trace_index = c->rec[c->rc];
            r->mismatch_simulated = *ev;
            r->mismatch_has_simulated = 1;
        }
        c->rc++;
    } else if (!r->has_mismatch) {
        r->has_mismatch = 1;
        r->mismatch_trace_index = c->n;
        r->mismatch_simulated = *ev;
        r->mismatch_has_simulated = 1;
    }
}

/* New segments take the address the recording gave the event the model is about to
 * emit, when it is that kind of event and the range is free in the model. */
static uint64_t on_addr(void *vc, od_seg_kind kind, uint64_t size, uint64_t stream)
{
    rctx *c = vc;
    if (c->rc >= c->n_rec) return 0;
    od_trace_entry t_v = od_trace_at(c->e, c->rec[c->rc]);
    const od_trace_entry *t = &t_v;
    if (seg_kind(t->action) != kind || !t->addr) return 0;
    if (kind == OD_SEG_ALLOC) {
        if (t->size != size || live_overlaps(c, t->addr, size)) return 0;
        return t->addr;
    }
    return t->addr; /* a new expandable reservation starts where its first map lands */
}

static void result_init(od_replay_result *r, size_t n, int64_t device)
{
    memset(r, 0, sizeof *r);
    r->device = device;
    r->trace_entries = n;
    r->answerable = 1;
    r->mismatch_trace_index = n;
    r->peak_allocated_index = n;
}

static void note_oom(od_allocsim *sim, od_replay_result *r, size_t i, uint64_t size, int recorded)
{
    r->ooms++;
    if (r->oom.happened) return;
    od_allocsim_stats st;
    od_allocsim_get_stats(sim, &st);
    r->oom.happened = 1;
    r->oom.event_index = i;
    r->oom.size_bytes = size;
    r->oom.recorded = recorded;
    r->oom.allocated_bytes = st.allocated_bytes;
    r->oom.reserved_bytes = st.reserved_bytes;
    r->oom.cached_free_bytes = st.cached_free_bytes;
    r->oom.largest_free_bytes = st.largest_free_block;
}

/* The pool entry i draws from, and the malloc flags a capture underway adds. */
static uint64_t pool_at(const rctx *c, size_t i)
{
    return c->pool ? c->pool[i] : 0;
}

static unsigned capture_flags(const rctx *c, size_t i)
{
    return c->capt && c->capt[i] ? OD_SIM_CAPTURING : 0;
}

/* Recorded releases of segments the model holds in a private pool: the graph that owned
 * the pool was destroyed before them (releasePool), so the release may free them. */
static void release_dead_pools(rctx *c, od_allocsim *sim, size_t from, size_t to)
{
    for (size_t j = from; j < to; j++) {
        if (od_trace_action(c->e, j) != OD_ACT_SEGMENT_FREE) continue;
        size_t k = live_find(c, od_trace_at(c->e, j).addr);
        if (k < c->n_live && c->live[k].addr == od_trace_at(c->e, j).addr && c->live[k].pool)
            od_allocsim_release_pool(sim, c->live[k].pool);
    }
}

/* Whether the run of recorded releases starting at i belongs to the request after it
 * (a retry or GC inside malloc) rather than to an empty_cache() call. */
static int releases_belong_to_request(const rctx *c, od_allocsim *sim, size_t i, size_t *run_end)
{
    size_t j = i;
    while (j < c->n && (od_trace_action(c->e, j) == OD_ACT_SEGMENT_FREE || od_trace_action(c->e, j) == OD_ACT_SEGMENT_UNMAP))
        j++;
    *run_end = j;
    int creates = 0;
    size_t k = j;
    while (k < c->n && is_seg(od_trace_action(c->e, k))) {
        if (od_trace_action(c->e, k) == OD_ACT_SEGMENT_ALLOC || od_trace_action(c->e, k) == OD_ACT_SEGMENT_MAP) creates = 1;
        k++;
    }
    if (k >= c->n) return 0;
    od_trace_entry r_v = od_trace_at(c->e, k);
    const od_trace_entry *r = &r_v;
    /* a failed request always went through the release path first */
    if (r->action == OD_ACT_OOM) return 1;
    if (r->action != OD_ACT_ALLOC || !creates) return 0;
    return od_allocsim_would_release(sim, r->size, r->stream, pool_at(c, k), capture_flags(c, k));
}

static od_status run(od_allocsim *sim, rctx *c, od_error *err)
{
    const od_device_trace *e = c->e;
    size_t n = c->n;
    od_replay_result *r = c->res;
    amap m;
    if (amap_init(&m, 4096)) return od_fail(err, OD_ERR_NOMEM, "out of memory");
    size_t skip_until = 0;
    od_status status = OD_OK;
    if (c->block_out) memset(c->block_out, 0, n * sizeof *c->block_out);
    /* the peak an entry reaches: above what the starting state already holds */
    uint64_t top = od_allocsim_allocated_bytes(sim);
    r->peak_allocated_index = n;
    for (size_t i = 0; i < n && status == OD_OK; i++) {
        od_trace_entry t_v = od_trace_at(e, i);
        const od_trace_entry *t = &t_v;
        uint64_t a = 0;
        int oom = 0;
        switch (t->action) {
        case OD_ACT_ALLOC: {
            r->events_replayed++;
            uint64_t pool = pool_at(c, i);
            if (pool) r->private_allocs++;
            status = od_allocsim_malloc(sim, t->size, t->stream, pool, capture_flags(c, i), &a, &oom);
            if (status) break;
            if (oom) note_oom(sim, r, i, t->size, 0);
            else if (a != t->addr) r->alloc_addr_mismatches++;
            if (a && c->block_out) { /* 0: not a whole number of units (a seeded block's odd size) */
                uint64_t bytes = od_allocsim_block_size(sim, a), units = bytes / OD_SIM_MIN_BLOCK;
                c->block_out[i] = bytes % OD_SIM_MIN_BLOCK == 0 && units <= UINT32_MAX ? (uint32_t)units : 0;
            }
            /* only addresses where the model differs from the recording need mapping
             * (a recorded address can be reused: drop any stale mapping) */
            if (t->addr && a != t->addr) {
                if (amap_put(&m, t->addr, a)) status = OD_ERR_NOMEM;
            } else if (t->addr && m.n) {
                amap_del(&m, t->addr);
            }
            break;
        }
        case OD_ACT_OOM: {
            r->events_replayed++;
            r->recorded_ooms++;
            /* without a cap, the device itself was full when it had less free than the
             * segment the request needed; then no cudaMalloc succeeds here either */
            unsigned flags = capture_flags(c, i);
            if (!c->cfg->allowed_bytes &&
                t->device_free < od_allocsim_segment_size(od_allocsim_round_size(c->cfg, t->size)))
                flags |= OD_SIM_DEVICE_FULL;
            status = od_allocsim_malloc(sim, t->size, t->stream, pool_at(c, i), flags, &a, &oom);
            if (status) break;
            if (oom) note_oom(sim, r, i, t->size, 1);
            break;
        }
        case OD_ACT_FREE_REQUESTED:
        case OD_ACT_FREE_COMPLETED: {
            r->events_replayed++;
            int mapped = m.n && amap_get(&m, t->addr, &a);
            if (!mapped) {
                /* the model's block sits at the recorded address, or (wrapped trace)
                 * was seeded there; otherwise the address is unknown */
                a = t->addr;
                if (!a) break;
            }
            if (a == 0) { /* the model failed this allocation: nothing to free */
                if (t->action == OD_ACT_FREE_COMPLETED) amap_del(&m, t->addr);
                break;
            }
            if (t->action == OD_ACT_FREE_REQUESTED) {
                /* the usual case: completion follows at once, no events to wait for */
                int immediate = i + 1 < n && od_trace_action(e, i + 1) == OD_ACT_FREE_COMPLETED &&
                                od_trace_at(e, i + 1).addr == t->addr;
                status = od_allocsim_free_request(sim, a, !immediate);
                if (status == OD_ERR_ARG) { r->unknown_frees++; status = OD_OK; }
                if (immediate) {
                    r->events_replayed++;
                    if (mapped) amap_del(&m, t->addr);
                    i++;
                }
            } else {
                int ignored;
                status = od_allocsim_free_complete(sim, a, &ignored);
                if (status == OD_ERR_ARG) { r->unknown_frees++; status = OD_OK; }
                if (mapped) amap_del(&m, t->addr);
            }
            break;
        }
        case OD_ACT_SEGMENT_FREE:
        case OD_ACT_SEGMENT_UNMAP: {
            r->seg_recorded++;
            if (i < skip_until) break;
            size_t run_end;
            if (c->pool) {
                size_t j = i;
                while (j < n && (od_trace_action(e, j) == OD_ACT_SEGMENT_FREE || od_trace_action(e, j) == OD_ACT_SEGMENT_UNMAP)) j++;
                release_dead_pools(c, sim, i, j);
            }
            if (!releases_belong_to_request(c, sim, i, &run_end)) {
                /* torch.cuda.empty_cache(): applied where it stands */
                r->external_releases += run_end - i;
                od_allocsim_empty_cache(sim);
            }
            skip_until = run_end;
            break;
        }
        case OD_ACT_SEGMENT_ALLOC:
        case OD_ACT_SEGMENT_MAP:
            r->seg_recorded++;
            break;
        default:
            break;
        }
        if (c->nomem) status = OD_ERR_NOMEM;
        if ((t->action == OD_ACT_ALLOC || t->action == OD_ACT_OOM) && a && !oom) {
            uint64_t now = od_allocsim_allocated_bytes(sim);
            if (now > top) {
                top = now;
                r->peak_allocated_index = i;
            }
        }
    }
    amap_free(&m);
    if (status == OD_ERR_NOMEM) return od_fail(err, OD_ERR_NOMEM, "out of memory");
    if (status) return od_fail(err, status, "the model rejected an event");
    /* recorded events the model never produced */
    if (c->rc < c->n_rec && !r->has_mismatch) {
        r->has_mismatch = 1;
        r->mismatch_trace_index = c->rec[c->rc];
        r->mismatch_has_simulated = 0;
    }
    od_allocsim_get_stats(sim, &r->stats);
    if (top != r->stats.peak_allocated_bytes) r->peak_allocated_index = n;
    return OD_OK;
}

void od_replay_config_from_snapshot(const od_snapshot *snap, od_allocsim_config *cfg)
{
    od_allocsim_config_default(cfg);
    if (!snap->settings.present) return;
    cfg->conf = snap->settings.conf;
    if (cfg->max_split_size <= 0) cfg->max_split_size = -1;
}

static od_status prepare(rctx *c, const od_device_trace *e, size_t n, const od_replay_opts *o,
                         od_replay_result *res, od_allocsim **sim, od_error *err)
{
    memset(c, 0, sizeof *c);
    c->e = e;
    c->n = n;
    c->res = res;
    c->cfg = &o->cfg;
    c->block_out = o->block_units_out;
    size_t cap = 64;
    c->rec = malloc(cap * sizeof *c->rec);
    if (!c->rec) return od_fail(err, OD_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        if (!is_seg(od_trace_action(e, i))) continue;
        if (c->n_rec == cap) {
            size_t *v = realloc(c->rec, cap * 2 * sizeof *v);
            if (!v) { free(c->rec); return od_fail(err, OD_ERR_NOMEM, "out of memory"); }
            c->rec = v;
            cap *= 2;
        }
        c->rec[c->n_rec++] = i;
    }
    od_status st = od_allocsim_create(&o->cfg, sim, err);
    if (st) { free(c->rec); return st; }
    od_allocsim_set_hooks(*sim, on_addr, on_event, c);
    return OD_OK;
}

static void finish(rctx *c, od_allocsim *sim)
{
    od_allocsim_free_sim(sim);
    free(c->rec);
    free(c->live);
}

/* The verdict on the replay itself: every recorded segment event matched, none left over. */
static int events_match(const od_replay_result *r)
{
    return !r->has_mismatch && r->seg_recorded == r->seg_simulated && r->seg_matched == r->seg_recorded;
}

od_status od_replay_trace(const od_device_trace *trace, const od_replay_opts *opts,
                          od_replay_result *res, od_error *err)
{
    rctx c;
    od_allocsim *sim;
    result_init(res, trace->n_entries, opts->device);
    od_status st = prepare(&c, trace, trace->n_entries, opts, res, &sim, err);
    if (st) return st;
    st = run(sim, &c, err);
    finish(&c, sim);
    res->approximate = !events_match(res);
    return st;
}

/* ---- CUDA graph private pools: which entries drew from one (see replay.h) ---- */

typedef struct {
    uint64_t addr, end, pool;
    size_t from;          /* entries from here on lie in this segment's lifetime */
} final_seg;

typedef struct {
    uint64_t stream, pool;
} stream_pool;

/* The private pools a snapshot's final segments show, numbered for the model: pool k + 1
 * is id[k] (a segment_pool_id other than (0, 0)), in the order the segments list them. */
typedef struct {
    int64_t (*id)[2];
    size_t n, cap;
} pool_ids;

static od_status collect_pool_ids(const od_snapshot *snap, int64_t dev, pool_ids *p)
{
    memset(p, 0, sizeof *p);
    for (size_t s = 0; s < snap->n_segments; s++) {
        const od_segment *g = &snap->segments[s];
        if (g->device != dev || (g->pool_id[0] == 0 && g->pool_id[1] == 0)) continue;
        size_t k = 0;
        while (k < p->n && (p->id[k][0] != g->pool_id[0] || p->id[k][1] != g->pool_id[1])) k++;
        if (k < p->n) continue;
        if (!od_grow((void **)&p->id, &p->cap, p->n + 1, sizeof *p->id)) return OD_ERR_NOMEM;
        p->id[p->n][0] = g->pool_id[0];
        p->id[p->n][1] = g->pool_id[1];
        p->n++;
    }
    return OD_OK;
}

/* The model's pool for a segment_pool_id: 0 for the default pools (0, 0). */
static uint64_t pool_of(const pool_ids *p, const int64_t id[2])
{
    for (size_t k = 0; k < p->n; k++)
        if (p->id[k][0] == id[0] && p->id[k][1] == id[1]) return k + 1;
    return 0;
}

/* The final segment holding addr (segs sorted by address, disjoint), or NULL. */
static const final_seg *seg_holding(const final_seg *segs, size_t n, uint64_t addr)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (segs[mid].end <= addr) lo = mid + 1;
        else hi = mid;
    }
    return lo < n && segs[lo].addr <= addr ? &segs[lo] : NULL;
}

/* The pool entry i's stream last (or next) showed; 0 when none did. Grows the table. */
static uint64_t *stream_slot(stream_pool **tab, size_t *n, size_t *cap, uint64_t stream, int *nomem)
{
    for (size_t k = 0; k < *n; k++)
        if ((*tab)[k].stream == stream) return &(*tab)[k].pool;
    if (!od_grow((void **)tab, cap, *n + 1, sizeof **tab)) {
        *nomem = 1;
        return NULL;
    }
    (*tab)[*n] = (stream_pool){ stream, 0 };
    return &(*tab)[(*n)++].pool;
}

/* Fill *pool_out (per entry, the pool alloc / oom entries draw from) and *capt_out (per
 * entry, a capture is underway) from the snapshot's private segments, by the rule in
 * replay.h. Both stay NULL when the final segments show no private pool. Returns
 * OD_ERR_NOMEM or OD_OK. */
static od_status infer_pools(const od_snapshot *snap, int64_t dev, const pool_ids *ids,
                             const od_device_trace *e, size_t n, uint64_t **pool_out, uint8_t **capt_out)
{
    *pool_out = NULL;
    *capt_out = NULL;
    if (!ids->n || !n) return OD_OK;
    int nomem = 0;
    final_seg *segs = NULL;
    stream_pool *tab = NULL;
    size_t n_segs = 0, cap_segs = 0, n_tab = 0, cap_tab = 0;
    uint64_t *pool = calloc(n, sizeof *pool);
    uint8_t *known = calloc(n, 1), *capt = calloc(n, 1);
    if (!pool || !known || !capt) goto nomem;
    for (size_t s = 0; s < snap->n_segments; s++) {
        const od_segment *g = &snap->segments[s];
        if (g->device != dev || !g->total_size) continue;
        if (!od_grow((void **)&segs, &cap_segs, n_segs + 1, sizeof *segs)) goto nomem;
        /* segments are sorted by (device, address) */
        segs[n_segs++] = (final_seg){ g->address, g->address + g->total_size, pool_of(ids, g->pool_id), 0 };
    }
    /* a segment's lifetime starts after the last release that touched its range */
    for (size_t i = 0; i < n; i++) {
        if (od_trace_action(e, i) != OD_ACT_SEGMENT_FREE && od_trace_action(e, i) != OD_ACT_SEGMENT_UNMAP) continue;
        size_t lo = 0, hi = n_segs;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (segs[mid].end <= od_trace_at(e, i).addr) lo = mid + 1;
            else hi = mid;
        }
        for (size_t k = lo; k < n_segs && segs[k].addr < od_trace_at(e, i).addr + od_trace_at(e, i).size; k++) segs[k].from = i + 1;
    }
    /* evidence: an alloc inside a final segment's lifetime drew from its pool */
    for (size_t i = 0; i < n; i++) {
        if (od_trace_action(e, i) != OD_ACT_ALLOC || !od_trace_at(e, i).addr) continue;
        const final_seg *g = seg_holding(segs, n_segs, od_trace_at(e, i).addr);
        if (g && i >= g->from) {
            pool[i] = g->pool;
            known[i] = 1;
        }
    }
    /* the rest: private pool P only between evidence of P on the same stream */
    for (size_t i = 0; i < n; i++) {
        if (od_trace_action(e, i) != OD_ACT_ALLOC && od_trace_action(e, i) != OD_ACT_OOM) continue;
        uint64_t *last = stream_slot(&tab, &n_tab, &cap_tab, od_trace_at(e, i).stream, &nomem);
        if (!last) goto nomem;
        if (known[i]) *last = pool[i];
        else pool[i] = *last;
    }
    for (size_t k = 0; k < n_tab; k++) tab[k].pool = 0;
    for (size_t i = n; i-- > 0;) {
        if (od_trace_action(e, i) != OD_ACT_ALLOC && od_trace_action(e, i) != OD_ACT_OOM) continue;
        uint64_t *next = stream_slot(&tab, &n_tab, &cap_tab, od_trace_at(e, i).stream, &nomem);
        if (!next) goto nomem;
        if (known[i]) *next = pool[i];
        else if (*next != pool[i]) pool[i] = 0;
    }
    /* a capture is underway from the first to the last entry drawn from its pool */
    for (uint64_t p = 1; p <= ids->n; p++) {
        size_t first = n, last = 0;
        for (size_t i = 0; i < n; i++)
            if (pool[i] == p && (od_trace_action(e, i) == OD_ACT_ALLOC || od_trace_action(e, i) == OD_ACT_OOM)) {
                if (first == n) first = i;
                last = i;
            }
        for (size_t i = first; i < n && i <= last; i++) capt[i] = 1;
    }
    free(segs);
    free(tab);
    free(known);
    *pool_out = pool;
    *capt_out = capt;
    return OD_OK;
nomem:
    free(segs);
    free(tab);
    free(known);
    free(pool);
    free(capt);
    return OD_ERR_NOMEM;
}

/* ---- wrapped traces: the state before the first entry ---- */

typedef struct {
    uint64_t addr, size, stream, pool;
    int small;
} seed_seg;

static int seed_cmp(const void *a, const void *b)
{
    const seed_seg *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* A trace is complete when it explains everything: every free has its alloc and every
 * final segment was created inside the trace. Otherwise the ring buffer wrapped (or
 * recording began late) and the starting state has to be rebuilt. */
/* Cheap completeness test for traces without expandable segments: a block live before
 * the trace began lives in a segment that existed before it, and that segment is either
 * still there at the end or released inside the trace; so the trace is complete exactly
 * when every released and every final segment was created inside it. Returns 1 when
 * complete, 0 when not or when expandable segments need the full test. */
static int quick_complete(const od_snapshot *snap, int64_t dev, const od_device_trace *e,
                          const size_t *rec, size_t n_rec)
{
    for (size_t s = 0; s < snap->n_segments; s++)
        if (snap->segments[s].device == dev && snap->segments[s].is_expandable) return 0;
    amap created;
    if (amap_init(&created, 256)) return 0;
    int ok = 1;
    uint64_t v;
    for (size_t k = 0; k < n_rec && ok; k++) {
        od_trace_entry t_v = od_trace_at(e, rec[k]);
        const od_trace_entry *t = &t_v;
        switch (t->action) {
        case OD_ACT_SEGMENT_ALLOC:
            if (amap_put(&created, t->addr, 1)) ok = 0;
            break;
        case OD_ACT_SEGMENT_FREE:
            if (amap_get(&created, t->addr, &v)) amap_del(&created, t->addr);
            else ok = 0;
            break;
        case OD_ACT_SEGMENT_MAP:
        case OD_ACT_SEGMENT_UNMAP:
            ok = 0;
            break;
        default:
            break;
        }
    }
    for (size_t s = 0; s < snap->n_segments && ok; s++) {
        const od_segment *g = &snap->segments[s];
        if (g->device == dev && !amap_get(&created, g->address, &v)) ok = 0;
    }
    amap_free(&created);
    return ok;
}

static od_status rebuild_start(const od_snapshot *snap, int64_t dev, const pool_ids *ids, const rctx *c,
                               od_allocsim *sim, od_replay_result *r, int *complete)
{
    const od_device_trace *e = c->e;
    size_t n = c->n;
    if (quick_complete(snap, dev, e, c->rec, c->n_rec)) {
        *complete = 1;
        return OD_OK;
    }
    amap live, created, ever;
    od_status st = OD_OK;
    seed_seg *segs = NULL;
    size_t nseg = 0, capseg = 0;
    uint64_t *orphans = NULL, *orphan_sz = NULL;
    size_t norph = 0, caporph = 0;
    memset(&ever, 0, sizeof ever);
    if (amap_init(&live, 4096) || amap_init(&created, 256) || amap_init(&ever, 256)) {
        amap_free(&live);
        amap_free(&created);
        amap_free(&ever);
        return OD_ERR_NOMEM;
    }
    *complete = 1;
#define PUSH_OR_GOTO_OUT(arr, cnt, cap, val)                                 \
    do {                                                                     \
        if ((cnt) == (cap)) {                                                \
            size_t nc_ = (cap) ? (cap) * 2 : 64;                             \
            void *p_ = realloc((arr), nc_ * sizeof *(arr));                  \
            if (!p_) { st = OD_ERR_NOMEM; goto out; }                        \
            (arr) = p_;                                                      \
            (cap) = nc_;                                                     \
        }                                                                    \
        (arr)[(cnt)++] = (val);                                              \
    } while (0)
    /* blocks allocated at the end: were they allocated inside the trace? (value 1) */
    for (size_t s = 0; s < snap->n_segments; s++) {
        const od_segment *g = &snap->segments[s];
        if (g->device != dev || g->is_expandable) continue;
        for (size_t b = 0; b < g->n_blocks; b++) {
            const od_block *k = &snap->blocks[g->first_block + b];
            if ((k->state == OD_BLOCK_ACTIVE_ALLOCATED || k->state == OD_BLOCK_ACTIVE_PENDING_FREE) &&
                k->address && amap_put(&ever, k->address, 0)) {
                st = OD_ERR_NOMEM;
                goto out;
            }
        }
    }
    size_t capsz = 0;
    for (size_t i = 0; i < n; i++) {
        od_trace_entry t_v = od_trace_at(e, i);
        const od_trace_entry *t = &t_v;
        uint64_t v;
        switch (t->action) {
        case OD_ACT_ALLOC:
            if (t->addr && amap_put(&live, t->addr, 1)) {
                st = OD_ERR_NOMEM;
                goto out;
            }
            if (ever.n && amap_get(&ever, t->addr, &v)) amap_put(&ever, t->addr, 1);
            break;
        case OD_ACT_FREE_REQUESTED:
        case OD_ACT_FREE_COMPLETED:
            if (!amap_get(&live, t->addr, &v)) {
                *complete = 0;
                /* live before the trace began: seed it */
                if (amap_put(&live, t->addr, 2)) { st = OD_ERR_NOMEM; goto out; }
                PUSH_OR_GOTO_OUT(orphans, norph, caporph, t->addr);
                if (norph > capsz) {
                    uint64_t *p = realloc(orphan_sz, caporph * sizeof *p);
                    if (!p) { st = OD_ERR_NOMEM; goto out; }
                    orphan_sz = p;
                    capsz = caporph;
                }
                orphan_sz[norph - 1] = t->size;
            }
            if (t->action == OD_ACT_FREE_COMPLETED) amap_del(&live, t->addr);
            break;
        case OD_ACT_SEGMENT_ALLOC:
        case OD_ACT_SEGMENT_MAP:
            if (amap_put(&created, t->addr, 1)) { st = OD_ERR_NOMEM; goto out; }
            break;
        case OD_ACT_SEGMENT_FREE:
            if (!amap_get(&created, t->addr, &v)) {
                *complete = 0;
                /* released inside the trace: its pool is not known, the default one's is likelier */
                seed_seg sg = { t->addr, t->size, t->stream, 0, t->size <= OD_SIM_SMALL_BUFFER };
                PUSH_OR_GOTO_OUT(segs, nseg, capseg, sg);
            } else {
                amap_del(&created, t->addr);
            }
            break;
        case OD_ACT_SEGMENT_UNMAP:
            break;
        default:
            break;
        }
    }
    /* final segments the trace never created existed from the start */
    for (size_t s = 0; s < snap->n_segments; s++) {
        const od_segment *g = &snap->segments[s];
        uint64_t v;
        if (g->device != dev || g->is_expandable) continue;
        if (amap_get(&created, g->address, &v)) continue;
        *complete = 0;
        seed_seg sg = { g->address, g->total_size, g->stream, pool_of(ids, g->pool_id), !g->is_large };
        PUSH_OR_GOTO_OUT(segs, nseg, capseg, sg);
    }
    if (*complete) goto out;
    od_sort(segs, nseg, sizeof *segs, seed_cmp);
    for (size_t s = 0; s < nseg; s++) {
        if (s && segs[s].addr < segs[s - 1].addr + segs[s - 1].size) continue;
        if (od_allocsim_seed_segment(sim, segs[s].addr, segs[s].size, segs[s].stream, segs[s].pool, segs[s].small) == OD_OK)
            r->seeded_segments++;
    }
    od_allocsim_config cfg;
    od_replay_config_from_snapshot(snap, &cfg);
    for (size_t i = 0; i < norph; i++)
        if (od_allocsim_seed_block(sim, orphans[i], od_allocsim_round_size(&cfg, orphan_sz[i])) == OD_OK)
            r->seeded_blocks++;
    /* blocks still allocated at the end that the trace never allocated */
    for (size_t s = 0; s < snap->n_segments; s++) {
        const od_segment *g = &snap->segments[s];
        if (g->device != dev || g->is_expandable) continue;
        for (size_t b = 0; b < g->n_blocks; b++) {
            const od_block *k = &snap->blocks[g->first_block + b];
            uint64_t v;
            if (k->state != OD_BLOCK_ACTIVE_ALLOCATED && k->state != OD_BLOCK_ACTIVE_PENDING_FREE) continue;
            if (!amap_get(&ever, k->address, &v) || v == 1) continue;
            if (od_allocsim_seed_block(sim, k->address, k->size) == OD_OK)
                r->seeded_blocks++;
        }
    }
out:
#undef PUSH_OR_GOTO_OUT
    free(segs);
    free(orphans);
    free(orphan_sz);
    amap_free(&live);
    amap_free(&created);
    amap_free(&ever);
    return st;
}

/* One replay of the device trace tr under opts: pools inferred, a wrapped trace's start
 * rebuilt; res->approximate etc. are left for od_replay_snapshot to judge. */
static od_status replay_device(const od_snapshot *snap, const od_device_trace *tr,
                               const od_replay_opts *opts, od_replay_result *res, od_error *err)
{
    result_init(res, tr->n_entries, tr->device);
    pool_ids ids;
    uint64_t *pool = NULL;
    uint8_t *capt = NULL;
    od_status st = collect_pool_ids(snap, tr->device, &ids);
    if (!st) st = infer_pools(snap, tr->device, &ids, tr, tr->n_entries, &pool, &capt);
    if (st) {
        free(ids.id);
        return od_fail(err, st, "out of memory");
    }
    res->private_pools = ids.n;
    rctx c;
    od_allocsim *sim;
    st = prepare(&c, tr, tr->n_entries, opts, res, &sim, err);
    if (st) goto out;
    c.pool = pool;
    c.capt = capt;
    int complete = 1;
    st = rebuild_start(snap, tr->device, &ids, &c, sim, res, &complete);
    if (st) {
        finish(&c, sim);
        st = od_fail(err, st, "out of memory");
        goto out;
    }
    res->wrapped = !complete;
    if (!complete) {
        od_allocsim_stats st0;
        od_allocsim_get_stats(sim, &st0);
        if (opts->cfg.allowed_bytes && st0.reserved_bytes > opts->cfg.allowed_bytes) {
            finish(&c, sim);
            st = od_fail(err, OD_ERR_ARG, "the cap of %llu bytes is below the %llu bytes "
                         "already reserved when the trace begins",
                         (unsigned long long)opts->cfg.allowed_bytes,
                         (unsigned long long)st0.reserved_bytes);
            goto out;
        }
        od_allocsim_reset_peaks(sim);
    }
    st = run(sim, &c, err);
    finish(&c, sim);
    for (size_t s = 0; s < snap->n_segments; s++) {
        const od_segment *g = &snap->segments[s];
        if (g->device != tr->device) continue;
        res->snapshot_allocated_bytes += g->allocated_size;
        res->snapshot_reserved_bytes += g->total_size;
    }
out:
    free(ids.id);
    free(pool);
    free(capt);
    return st;
}

od_status od_replay_snapshot(const od_snapshot *snap, const od_replay_opts *opts,
                             od_replay_result *res, od_error *err)
{
    if (!snap->has_traces || snap->n_traces == 0)
        return od_fail(err, OD_ERR_FORMAT, "the snapshot has no allocation trace to replay "
                       "(record with torch.cuda.memory._record_memory_history)");
    const od_device_trace *tr = NULL;
    for (size_t i = 0; i < snap->n_traces; i++) {
        const od_device_trace *d = &snap->traces[i];
        if (opts->device >= 0 ? d->device == opts->device : d->n_entries > 0) { tr = d; break; }
    }
    if (!tr) {
        if (opts->device >= 0)
            return od_fail(err, OD_ERR_ARG, "the snapshot has no trace for device %lld", (long long)opts->device);
        return od_fail(err, OD_ERR_FORMAT, "every device trace in the snapshot is empty");
    }
    od_status st = replay_device(snap, tr, opts, res, err);
    if (st) return st;
    od_allocsim_config own;
    od_replay_config_from_snapshot(snap, &own);
    res->whatif = !od_allocsim_config_same_policy(&opts->cfg, &own);
    res->answerable = !(res->wrapped && res->whatif);
    if (res->wrapped) {
        res->approximate = 1;
    } else if (!res->whatif) {
        res->approximate = !events_match(res);
    } else {
        /* a what-if is as good as the model's replay of the run itself, under the same cap */
        od_replay_opts own_opts = *opts;
        own_opts.cfg.conf = own.conf;
        own_opts.block_units_out = NULL;
        od_replay_result *base = malloc(sizeof *base);
        if (!base) return od_fail(err, OD_ERR_NOMEM, "out of memory");
        st = replay_device(snap, tr, &own_opts, base, err);
        res->approximate = st || base->wrapped || !events_match(base);
        free(base);
        if (st) return st;
    }
    return OD_OK;
}

int od_replay_verified(const od_replay_result *r)
{
    return !r->wrapped && events_match(r);
}
