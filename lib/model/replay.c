/* replay.c - drive allocsim with a recorded trace and hold the model to the recording.
 *
 * A replay reads the trace in order, never more than a run of releases and the request
 * after it ahead (src): straight from a held trace, or through a window over a pass
 * (tracepass.h) for a streamed one, so that memory stays with what is live. What does not
 * depend on the settings - the recorded segment events, the state a wrapped trace starts
 * from, which entries drew from a CUDA graph's private pool - is worked out once (plan).
 * Several settings replay in one go: each is a job with its own model; a streamed trace is
 * then read once and its batches handed to every job (feed), the jobs spread over threads,
 * each going ahead in steps. A job's figures are the same whichever thread runs it. */
#include "model/replay.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "read/tracepass.h"

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

/* ---- the trace, in order ---- */

/* Entries [lo, hi) of the trace in a ring (a streamed trace), or all of them (held). */
typedef struct {
    const od_device_trace *t;   /* held: read at random */
    size_t n;
    od_trace_entry *ring;
    size_t mask, lo, hi;
    size_t (*more)(void *ctx, od_trace_entry *buf, size_t max); /* the next entries, 0 at the end */
    void *ctx;
    int failed;                 /* the pass ended early or failed: the replay fails */
} src;

#define SRC_RING 4096u

static void src_init_held(src *s, const od_device_trace *t)
{
    memset(s, 0, sizeof *s);
    s->t = t;
    s->n = t->n_entries;
}

static void src_init_stream(src *s, size_t n, size_t (*more)(void *, od_trace_entry *, size_t), void *ctx)
{
    memset(s, 0, sizeof *s);
    s->n = n;
    s->more = more;
    s->ctx = ctx;
}

/* Read entries until entry i is in the ring, growing it while the window needs it; 0 when
 * the trace ends first or memory runs out (s->failed). */
static int src_fill(src *s, size_t i)
{
    while (s->hi <= i) {
        size_t cap = s->ring ? s->mask + 1 : 0;
        if (s->hi - s->lo == cap) {
            size_t nc = cap ? cap * 2 : SRC_RING;
            od_trace_entry *r = malloc(nc * sizeof *r);
            if (!r) {
                s->failed = 1;
                return 0;
            }
            for (size_t k = s->lo; k < s->hi; k++)
                r[k & (nc - 1)] = s->ring[k & s->mask];
            free(s->ring);
            s->ring = r;
            s->mask = nc - 1;
            cap = nc;
        }
        size_t at = s->hi & s->mask, room = cap - (s->hi - s->lo);
        if (room > cap - at)
            room = cap - at;
        size_t got = s->more(s->ctx, &s->ring[at], room);
        if (got == 0) {
            s->failed = 1;
            return 0;
        }
        s->hi += got;
    }
    return 1;
}

/* Entry i (< n, and not released). A failed read gives an entry that changes nothing. */
static inline od_trace_entry src_at(src *s, size_t i)
{
    if (s->t)
        return od_trace_at(s->t, i);
    if (i >= s->hi && !src_fill(s, i)) {
        od_trace_entry none;
        memset(&none, 0, sizeof none);
        none.action = OD_ACT_OTHER;
        return none;
    }
    return s->ring[i & s->mask];
}

static inline uint8_t src_action(src *s, size_t i)
{
    return s->t ? od_trace_action(s->t, i) : src_at(s, i).action;
}

/* Entries before i are not needed again. */
static inline void src_release(src *s, size_t i)
{
    if (i > s->lo && !s->t)
        s->lo = i < s->hi ? i : s->hi;
}

static void src_free(src *s)
{
    free(s->ring);
}

static size_t pass_more(void *ctx, od_trace_entry *buf, size_t max)
{
    return od_trace_pass_read(ctx, buf, max);
}

/* ---- one reading of a streamed trace for several jobs ---- */

#define FEED_SLOTS 8u      /* batches kept ahead while every reader keeps up */
#define FEED_BATCH 8192u

typedef struct {
    od_trace_entry *e;
    size_t len;
    int left;                   /* readers that have not copied it yet */
} fbatch;

/* The batches one pass gives, oldest first, each kept until every reader still reading
 * has copied it into its own window: at most FEED_SLOTS of them. Each reader has a thread
 * of its own, and copies batches in order (looking ahead copies them into its window), so
 * the reader of the oldest batch can always go on: the pass never waits for ever. */
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    od_trace_pass *pass;
    fbatch *win;                /* batches base, base + 1, ... */
    size_t n_win, cap_win;
    uint64_t base;
    od_trace_entry **spare;     /* buffers of batches every reader copied */
    size_t n_spare, cap_spare;
    int readers;                /* readers still reading */
    int ended;                  /* the pass gave its last batch, failed, or memory ran out */
    int nomem;
} feed;

typedef struct {
    feed *f;
    uint64_t next;              /* the batch to copy next */
    size_t pos;                 /* entries of it copied */
    int detached;
} feed_reader;

/* Drop the batches every reader has copied (the lock held). */
static void feed_trim(feed *f)
{
    size_t k = 0;
    while (k < f->n_win && f->win[k].left <= 0) {
        if (od_grow((void **)&f->spare, &f->cap_spare, f->n_spare + 1, sizeof *f->spare))
            f->spare[f->n_spare++] = f->win[k].e;
        else
            free(f->win[k].e);
        k++;
    }
    memmove(f->win, f->win + k, (f->n_win - k) * sizeof *f->win);
    f->n_win -= k;
    f->base += k;
}

static size_t feed_more(void *ctx, od_trace_entry *buf, size_t max)
{
    feed_reader *r = ctx;
    feed *f = r->f;
    pthread_mutex_lock(&f->mu);
    while (r->next >= f->base + f->n_win && !f->ended)
        pthread_cond_wait(&f->cv, &f->mu);
    size_t k = 0;
    if (r->next < f->base + f->n_win) {
        fbatch *b = &f->win[r->next - f->base];
        k = b->len - r->pos < max ? b->len - r->pos : max;
        memcpy(buf, b->e + r->pos, k * sizeof *buf);
        r->pos += k;
        if (r->pos == b->len) {
            r->pos = 0;
            r->next++;
            if (--b->left == 0) {
                feed_trim(f);
                pthread_cond_broadcast(&f->cv);
            }
        }
    }
    pthread_mutex_unlock(&f->mu);
    return k;
}

/* A reader that stops (done or failed) no longer holds batches back. */
static void feed_detach(feed_reader *r)
{
    feed *f = r->f;
    if (!f || r->detached)
        return;
    pthread_mutex_lock(&f->mu);
    for (uint64_t b = r->next; b < f->base + f->n_win; b++)
        f->win[b - f->base].left--;
    f->readers--;
    r->detached = 1;
    feed_trim(f);
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

/* The reading itself (the calling thread), until the pass ends or no one reads. */
static void feed_run(feed *f)
{
    for (;;) {
        pthread_mutex_lock(&f->mu);
        while (f->readers > 0 && f->n_win >= FEED_SLOTS)
            pthread_cond_wait(&f->cv, &f->mu);
        od_trace_entry *e = f->readers > 0 && f->n_spare ? f->spare[--f->n_spare] : NULL;
        int go = f->readers > 0;
        pthread_mutex_unlock(&f->mu);
        if (go && !e && !(e = malloc(FEED_BATCH * sizeof *e)))
            f->nomem = 1;
        size_t got = go && e ? od_trace_pass_read(f->pass, e, FEED_BATCH) : 0;
        pthread_mutex_lock(&f->mu);
        if (got && od_grow((void **)&f->win, &f->cap_win, f->n_win + 1, sizeof *f->win)) {
            f->win[f->n_win++] = (fbatch){ e, got, f->readers };
        } else {
            if (got)
                f->nomem = 1;
            free(e);
            f->ended = 1;
        }
        pthread_cond_broadcast(&f->cv);
        int ended = f->ended;
        pthread_mutex_unlock(&f->mu);
        if (ended)
            return;
    }
}

static void feed_free(feed *f)
{
    for (size_t k = 0; k < f->n_win; k++)
        free(f->win[k].e);
    for (size_t k = 0; k < f->n_spare; k++)
        free(f->spare[k]);
    free(f->win);
    free(f->spare);
}

/* ---- replay state ---- */

typedef struct {
    uint64_t addr, size, pool;
} range;

/* A segment event the trace recorded, by its place in the trace. */
typedef struct {
    size_t index;
    uint64_t addr, size;
    uint8_t action;
} seg_rec;

typedef struct {
    src *s;
    size_t n;
    const seg_rec *rec;   /* the recorded segment events, in order */
    size_t n_rec, rc;     /* rc: next recorded event to compare with */
    od_replay_result *res;
    const od_allocsim_config *cfg;
    range *live;          /* model's live non-expandable segments, sorted by address */
    size_t n_live, cap_live;
    const uint16_t *pool; /* per entry: the pool an alloc / oom entry draws from, or NULL */
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

/* The first mismatch: at recorded event k (n_rec: none left), or none simulated. */
static void note_mismatch(rctx *c, size_t k, const od_seg_event *ev)
{
    od_replay_result *r = c->res;
    r->has_mismatch = 1;
    r->mismatch_trace_index = k < c->n_rec ? c->rec[k].index : c->n;
    r->mismatch_has_recorded = k < c->n_rec;
    if (k < c->n_rec) {
        memset(&r->mismatch_recorded, 0, sizeof r->mismatch_recorded);
        r->mismatch_recorded.action = c->rec[k].action;
        r->mismatch_recorded.addr = c->rec[k].addr;
        r->mismatch_recorded.size = c->rec[k].size;
    }
    r->mismatch_has_simulated = ev != NULL;
    if (ev) r->mismatch_simulated = *ev;
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
        const seg_rec *t = &c->rec[c->rc];
        if (seg_kind(t->action) == ev->kind && t->size == ev->size) {
            r->seg_matched++;
            if (t->addr == ev->addr) r->seg_addr_matched++;
        } else if (!r->has_mismatch) {
            note_mismatch(c, c->rc, ev);
        }
        c->rc++;
    } else if (!r->has_mismatch) {
        note_mismatch(c, c->n_rec, ev);
    }
}

/* New segments take the address the recording gave the event the model is about to
 * emit, when it is that kind of event and the range is free in the model. */
static uint64_t on_addr(void *vc, od_seg_kind kind, uint64_t size, uint64_t stream)
{
    rctx *c = vc;
    (void)stream;
    if (c->rc >= c->n_rec) return 0;
    const seg_rec *t = &c->rec[c->rc];
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

static int is_release(uint8_t a)
{
    return a == OD_ACT_SEGMENT_FREE || a == OD_ACT_SEGMENT_UNMAP;
}

/* Recorded releases of segments the model holds in a private pool: the graph that owned
 * the pool was destroyed before them (releasePool), so the release may free them. */
static void release_dead_pools(rctx *c, od_allocsim *sim, size_t from, size_t to)
{
    for (size_t j = from; j < to; j++) {
        if (src_action(c->s, j) != OD_ACT_SEGMENT_FREE) continue;
        uint64_t addr = src_at(c->s, j).addr;
        size_t k = live_find(c, addr);
        if (k < c->n_live && c->live[k].addr == addr && c->live[k].pool)
            od_allocsim_release_pool(sim, c->live[k].pool);
    }
}

/* Whether the run of recorded releases starting at i belongs to the request after it
 * (a retry or GC inside malloc) rather than to an empty_cache() call. */
static int releases_belong_to_request(rctx *c, od_allocsim *sim, size_t i, size_t *run_end)
{
    size_t j = i;
    while (j < c->n && is_release(src_action(c->s, j)))
        j++;
    *run_end = j;
    int creates = 0;
    size_t k = j;
    while (k < c->n && is_seg(src_action(c->s, k))) {
        uint8_t a = src_action(c->s, k);
        if (a == OD_ACT_SEGMENT_ALLOC || a == OD_ACT_SEGMENT_MAP) creates = 1;
        k++;
    }
    if (k >= c->n) return 0;
    od_trace_entry r = src_at(c->s, k);
    /* a failed request always went through the release path first */
    if (r.action == OD_ACT_OOM) return 1;
    if (r.action != OD_ACT_ALLOC || !creates) return 0;
    return od_allocsim_would_release(sim, r.size, r.stream, pool_at(c, k), capture_flags(c, k));
}

/* ---- what the settings do not change (plan) ---- */

typedef struct {
    uint64_t addr, end, pool;
    size_t from;          /* entries from here on lie in this segment's lifetime */
} final_seg;

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


typedef struct {
    uint64_t addr, size, stream, pool;
    int small;
} seed_seg;

static int seed_cmp(const void *a, const void *b)
{
    const seed_seg *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The recorded segment events, the starting state of a wrapped trace, the private pools:
 * worked out once for every job replaying the device's trace. */
typedef struct {
    const od_snapshot *snap;   /* NULL: a trace replayed alone (od_replay_trace) */
    const od_device_trace *tr;
    int64_t device;
    size_t n;
    seg_rec *rec;
    size_t n_rec, cap_rec;
    int complete;              /* nothing was live before the trace began */
    seed_seg *segs;            /* the segments a wrapped trace starts with, by address */
    size_t nseg, capseg;
    uint64_t *orphans, *orphan_sz; /* blocks freed before the trace allocates them */
    size_t norph, caporph, caporph_sz;
    amap ever;                 /* blocks allocated at the end: 1 when the trace allocated them */
    pool_ids ids;
    uint16_t *pool;            /* per entry, only with private pools */
    uint8_t *capt;
    uint64_t snapshot_allocated, snapshot_reserved;
} plan;

/* A pass over the plan's trace: held, read at random; streamed, a pass of its own. */
static od_status plan_src(const plan *p, src *s, od_trace_pass **pass, od_error *err)
{
    *pass = NULL;
    if (!p->snap || !od_snapshot_is_streamed(p->snap)) {
        src_init_held(s, p->tr);
        return OD_OK;
    }
    od_status st = od_trace_pass_open(p->snap, p->device, pass, err);
    if (st == OD_OK)
        src_init_stream(s, p->n, pass_more, *pass);
    return st;
}

/* The end of a pass: its error, if reading it failed. */
static od_status plan_src_done(src *s, od_trace_pass *pass, od_error *err)
{
    od_status st = OD_OK;
    if (s->failed) {
        st = pass ? od_trace_pass_status(pass, err) : OD_OK;
        if (st == OD_OK) st = od_fail(err, OD_ERR_NOMEM, "out of memory");
    }
    src_free(s);
    od_trace_pass_close(pass);
    return st;
}

static int push_rec(plan *p, size_t i, const od_trace_entry *t)
{
    if (!od_grow((void **)&p->rec, &p->cap_rec, p->n_rec + 1, sizeof *p->rec)) return 0;
    p->rec[p->n_rec++] = (seg_rec){ i, t->addr, t->size, t->action };
    return 1;
}

/* Cheap completeness test for traces without expandable segments: a block live before
 * the trace began lives in a segment that existed before it, and that segment is either
 * still there at the end or released inside the trace; so the trace is complete exactly
 * when every released and every final segment was created inside it. Returns 1 when
 * complete, 0 when not or when expandable segments need the full test. */
static int quick_complete(const plan *p)
{
    const od_snapshot *snap = p->snap;
    for (size_t s = 0; s < snap->n_segments; s++)
        if (snap->segments[s].device == p->device && snap->segments[s].is_expandable) return 0;
    amap created;
    if (amap_init(&created, 256)) return 0;
    int ok = 1;
    uint64_t v;
    for (size_t k = 0; k < p->n_rec && ok; k++) {
        const seg_rec *t = &p->rec[k];
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
        if (g->device == p->device && !amap_get(&created, g->address, &v)) ok = 0;
    }
    amap_free(&created);
    return ok;
}

/* The full completeness test, a step per entry: what was live or reserved before the
 * trace began (to seed), and which final blocks the trace allocated. */
typedef struct {
    amap live, created;
} rebuild;

static int push_seed(plan *p, seed_seg sg)
{
    if (!od_grow((void **)&p->segs, &p->capseg, p->nseg + 1, sizeof *p->segs)) return 0;
    p->segs[p->nseg++] = sg;
    return 1;
}

static int rebuild_step(plan *p, rebuild *b, const od_trace_entry *t)
{
    uint64_t v;
    switch (t->action) {
    case OD_ACT_ALLOC:
        if (t->addr && amap_put(&b->live, t->addr, 1)) return 0;
        if (p->ever.n && amap_get(&p->ever, t->addr, &v)) amap_put(&p->ever, t->addr, 1);
        break;
    case OD_ACT_FREE_REQUESTED:
    case OD_ACT_FREE_COMPLETED:
        if (!amap_get(&b->live, t->addr, &v)) {
            p->complete = 0;
            /* live before the trace began: seed it */
            if (amap_put(&b->live, t->addr, 2)) return 0;
            if (!od_grow((void **)&p->orphans, &p->caporph, p->norph + 1, sizeof *p->orphans)) return 0;
            if (!od_grow((void **)&p->orphan_sz, &p->caporph_sz, p->norph + 1, sizeof *p->orphan_sz)) return 0;
            p->orphans[p->norph] = t->addr;
            p->orphan_sz[p->norph++] = t->size;
        }
        if (t->action == OD_ACT_FREE_COMPLETED) amap_del(&b->live, t->addr);
        break;
    case OD_ACT_SEGMENT_ALLOC:
    case OD_ACT_SEGMENT_MAP:
        if (amap_put(&b->created, t->addr, 1)) return 0;
        break;
    case OD_ACT_SEGMENT_FREE:
        if (!amap_get(&b->created, t->addr, &v)) {
            p->complete = 0;
            /* released inside the trace: its pool is not known, the default one's is likelier */
            seed_seg sg = { t->addr, t->size, t->stream, 0, t->size <= OD_SIM_SMALL_BUFFER };
            if (!push_seed(p, sg)) return 0;
        } else {
            amap_del(&b->created, t->addr);
        }
        break;
    default:
        break;
    }
    return 1;
}

/* After the last entry: final segments the trace never created existed from the start. */
static int rebuild_end(plan *p, rebuild *b)
{
    const od_snapshot *snap = p->snap;
    for (size_t s = 0; s < snap->n_segments; s++) {
        const od_segment *g = &snap->segments[s];
        uint64_t v;
        if (g->device != p->device || g->is_expandable) continue;
        if (amap_get(&b->created, g->address, &v)) continue;
        p->complete = 0;
        seed_seg sg = { g->address, g->total_size, g->stream, pool_of(&p->ids, g->pool_id), !g->is_large };
        if (!push_seed(p, sg)) return 0;
    }
    if (!p->complete) od_sort(p->segs, p->nseg, sizeof *p->segs, seed_cmp);
    return 1;
}

/* The final blocks allocated at the end (ever: 0 until the trace allocates them). */
static int collect_ever(plan *p)
{
    const od_snapshot *snap = p->snap;
    for (size_t s = 0; s < snap->n_segments; s++) {
        const od_segment *g = &snap->segments[s];
        if (g->device != p->device || g->is_expandable) continue;
        for (size_t b = 0; b < g->n_blocks; b++) {
            const od_block *k = &snap->blocks[g->first_block + b];
            if ((k->state == OD_BLOCK_ACTIVE_ALLOCATED || k->state == OD_BLOCK_ACTIVE_PENDING_FREE) &&
                k->address && amap_put(&p->ever, k->address, 0))
                return 0;
        }
    }
    return 1;
}

/* One pass over the trace (two at most, held): the recorded segment events and the full
 * completeness test, which a held trace needs only when the quick one fails (a streamed
 * trace is better read once: it runs both at once). */
static od_status plan_scan(plan *p, od_error *err)
{
    int quick_possible = 1;
    for (size_t s = 0; s < p->snap->n_segments; s++)
        if (p->snap->segments[s].device == p->device && p->snap->segments[s].is_expandable) quick_possible = 0;
    int full = od_snapshot_is_streamed(p->snap) || !quick_possible;
    rebuild b;
    memset(&b, 0, sizeof b);
    od_status st = OD_OK;
    if (amap_init(&p->ever, 256) || amap_init(&b.live, 4096) || amap_init(&b.created, 256) || !collect_ever(p))
        st = od_fail(err, OD_ERR_NOMEM, "out of memory");
    p->complete = 1;
    for (int round = 0; st == OD_OK && round < 2; round++) {
        src s;
        od_trace_pass *pass;
        if ((st = plan_src(p, &s, &pass, err)) != OD_OK) break;
        int ok = 1;
        for (size_t i = 0; i < p->n && ok && !s.failed; i++) {
            src_release(&s, i);
            uint8_t a = src_action(&s, i);
            if (!full && !is_seg(a)) continue;
            od_trace_entry t = src_at(&s, i);
            if (round == 0 && is_seg(a) && !push_rec(p, i, &t)) ok = 0;
            if (full && !rebuild_step(p, &b, &t)) ok = 0;
        }
        st = plan_src_done(&s, pass, err);
        if (st == OD_OK && !ok) st = od_fail(err, OD_ERR_NOMEM, "out of memory");
        if (st != OD_OK || quick_complete(p)) {
            p->complete = 1;
            break;
        }
        if (full) {
            if (!rebuild_end(p, &b)) st = od_fail(err, OD_ERR_NOMEM, "out of memory");
            break;
        }
        full = 1; /* held, the quick test failed: the full one, in a second round */
    }
    amap_free(&b.live);
    amap_free(&b.created);
    return st;
}

/* Which entries drew from a private pool (see replay.h): one pass for the releases and the
 * evidence, then the rule, over per-entry arrays (only a trace with private pools gets
 * them). Leaves p->pool and p->capt NULL when the final segments show no private pool. */
static od_status plan_pools(plan *p, od_error *err)
{
    const od_snapshot *snap = p->snap;
    size_t n = p->n;
    if (!p->ids.n || !n) return OD_OK;
    od_status st = OD_OK;
    final_seg *segs = NULL;
    size_t n_segs = 0, cap_segs = 0;
    uint64_t *streams = NULL, *last = NULL;
    size_t n_streams = 0, cap_streams = 0;
    uint32_t *segof = calloc(n, sizeof *segof); /* final segment + 1 holding an alloc's address */
    uint16_t *sid = calloc(n, sizeof *sid);     /* an alloc / oom entry's stream, numbered */
    uint8_t *flag = calloc(n, 1);               /* 1: alloc / oom, 2: its pool is known */
    p->pool = calloc(n, sizeof *p->pool);
    p->capt = calloc(n, 1);
    if (!segof || !sid || !flag || !p->pool || !p->capt) goto nomem;
    for (size_t k = 0; k < snap->n_segments; k++) {
        const od_segment *g = &snap->segments[k];
        if (g->device != p->device || !g->total_size) continue;
        if (!od_grow((void **)&segs, &cap_segs, n_segs + 1, sizeof *segs)) goto nomem;
        /* segments are sorted by (device, address) */
        segs[n_segs++] = (final_seg){ g->address, g->address + g->total_size, pool_of(&p->ids, g->pool_id), 0 };
    }
    src s;
    od_trace_pass *pass;
    if ((st = plan_src(p, &s, &pass, err)) != OD_OK) goto out;
    for (size_t i = 0; i < n && !s.failed; i++) {
        src_release(&s, i);
        od_trace_entry t = src_at(&s, i);
        if (is_release(t.action)) {
            /* a segment's lifetime starts after the last release that touched its range */
            size_t lo = 0, hi = n_segs;
            while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (segs[mid].end <= t.addr) lo = mid + 1;
                else hi = mid;
            }
            for (size_t k = lo; k < n_segs && segs[k].addr < t.addr + t.size; k++) segs[k].from = i + 1;
        }
        if (t.action != OD_ACT_ALLOC && t.action != OD_ACT_OOM) continue;
        flag[i] = 1;
        size_t k = 0;
        while (k < n_streams && streams[k] != t.stream) k++;
        if (k == n_streams) {
            if (n_streams == UINT16_MAX || !od_grow((void **)&streams, &cap_streams, n_streams + 1, sizeof *streams))
                goto nomem_src;
            streams[n_streams++] = t.stream;
        }
        sid[i] = (uint16_t)k;
        if (t.action == OD_ACT_ALLOC && t.addr) {
            const final_seg *g = seg_holding(segs, n_segs, t.addr);
            if (g) segof[i] = (uint32_t)(g - segs) + 1;
        }
    }
    if ((st = plan_src_done(&s, pass, err)) != OD_OK) goto out;
    /* evidence: an alloc inside a final segment's lifetime drew from its pool */
    for (size_t i = 0; i < n; i++)
        if (segof[i] && i >= segs[segof[i] - 1].from) {
            p->pool[i] = (uint16_t)segs[segof[i] - 1].pool;
            flag[i] |= 2;
        }
    /* the rest: private pool P only between evidence of P on the same stream */
    last = calloc(n_streams ? n_streams : 1, sizeof *last);
    if (!last) goto nomem;
    for (size_t i = 0; i < n; i++) {
        if (!(flag[i] & 1)) continue;
        if (flag[i] & 2) last[sid[i]] = p->pool[i];
        else p->pool[i] = (uint16_t)last[sid[i]];
    }
    memset(last, 0, (n_streams ? n_streams : 1) * sizeof *last);
    for (size_t i = n; i-- > 0;) {
        if (!(flag[i] & 1)) continue;
        if (flag[i] & 2) last[sid[i]] = p->pool[i];
        else if (last[sid[i]] != p->pool[i]) p->pool[i] = 0;
    }
    /* a capture is underway from the first to the last entry drawn from its pool */
    for (uint64_t q = 1; q <= p->ids.n; q++) {
        size_t first = n, end = 0;
        for (size_t i = 0; i < n; i++)
            if (p->pool[i] == q && (flag[i] & 1)) {
                if (first == n) first = i;
                end = i;
            }
        for (size_t i = first; i < n && i <= end; i++) p->capt[i] = 1;
    }
    goto out;
nomem_src:
    plan_src_done(&s, pass, err);
nomem:
    st = od_fail(err, OD_ERR_NOMEM, "out of memory");
out:
    free(segs);
    free(streams);
    free(last);
    free(segof);
    free(sid);
    free(flag);
    return st;
}

static void plan_free(plan *p)
{
    free(p->rec);
    free(p->segs);
    free(p->orphans);
    free(p->orphan_sz);
    amap_free(&p->ever);
    free(p->ids.id);
    free(p->pool);
    free(p->capt);
}

/* The plan for a snapshot's device trace tr. */
static od_status plan_make(plan *p, const od_snapshot *snap, const od_device_trace *tr, od_error *err)
{
    memset(p, 0, sizeof *p);
    p->snap = snap;
    p->tr = tr;
    p->device = tr->device;
    p->n = tr->n_entries;
    od_status st = collect_pool_ids(snap, tr->device, &p->ids);
    if (st != OD_OK) return od_fail(err, st, "out of memory");
    if ((st = plan_scan(p, err)) == OD_OK) st = plan_pools(p, err);
    for (size_t s = 0; s < snap->n_segments; s++) {
        const od_segment *g = &snap->segments[s];
        if (g->device != tr->device) continue;
        p->snapshot_allocated += g->allocated_size;
        p->snapshot_reserved += g->total_size;
    }
    return st;
}

/* Seed a model with the state a wrapped trace starts from. */
static void plan_seed(const plan *p, od_allocsim *sim, od_replay_result *r)
{
    for (size_t s = 0; s < p->nseg; s++) {
        if (s && p->segs[s].addr < p->segs[s - 1].addr + p->segs[s - 1].size) continue;
        if (od_allocsim_seed_segment(sim, p->segs[s].addr, p->segs[s].size, p->segs[s].stream, p->segs[s].pool,
                                     p->segs[s].small) == OD_OK)
            r->seeded_segments++;
    }
    od_allocsim_config cfg;
    od_replay_config_from_snapshot(p->snap, &cfg);
    for (size_t i = 0; i < p->norph; i++)
        if (od_allocsim_seed_block(sim, p->orphans[i], od_allocsim_round_size(&cfg, p->orphan_sz[i])) == OD_OK)
            r->seeded_blocks++;
    /* blocks still allocated at the end that the trace never allocated */
    for (size_t s = 0; s < p->snap->n_segments; s++) {
        const od_segment *g = &p->snap->segments[s];
        if (g->device != p->device || g->is_expandable) continue;
        for (size_t b = 0; b < g->n_blocks; b++) {
            const od_block *k = &p->snap->blocks[g->first_block + b];
            uint64_t v;
            if (k->state != OD_BLOCK_ACTIVE_ALLOCATED && k->state != OD_BLOCK_ACTIVE_PENDING_FREE) continue;
            if (!amap_get(&p->ever, k->address, &v) || v == 1) continue;
            if (od_allocsim_seed_block(sim, k->address, k->size) == OD_OK)
                r->seeded_blocks++;
        }
    }
}

/* ---- one replay (a job) ---- */

typedef struct {
    const plan *p;
    const od_replay_opts *opts;
    od_replay_result *res;
    rctx c;
    od_allocsim *sim;
    amap m;
    src s;
    feed_reader fr;
    od_trace_pass *pass;        /* its own pass: a streamed trace replayed alone */
    size_t i, skip_until;
    uint64_t top;               /* the peak an entry reaches: above the starting state */
    od_status status;
    od_error err;
    int done;
} job;

/* Set up job j for plan p (its src is the caller's to set). */
static od_status job_start(job *j, const plan *p, const od_replay_opts *o, od_replay_result *res)
{
    od_error *err = &j->err;
    j->p = p;
    j->opts = o;
    j->res = res;
    result_init(res, p->n, p->device);
    res->private_pools = p->ids.n;
    rctx *c = &j->c;
    memset(c, 0, sizeof *c);
    c->s = &j->s;
    c->n = p->n;
    c->rec = p->rec;
    c->n_rec = p->n_rec;
    c->res = res;
    c->cfg = &o->cfg;
    c->pool = p->pool;
    c->capt = p->capt;
    c->block_out = o->block_units_out;
    od_status st = od_allocsim_create(&o->cfg, &j->sim, err);
    if (st) return st;
    od_allocsim_set_hooks(j->sim, on_addr, on_event, c);
    res->wrapped = !p->complete;
    if (!p->complete) {
        plan_seed(p, j->sim, res);
        od_allocsim_stats st0;
        od_allocsim_get_stats(j->sim, &st0);
        if (o->cfg.allowed_bytes && st0.reserved_bytes > o->cfg.allowed_bytes)
            return od_fail(err, OD_ERR_ARG, "the cap of %llu bytes is below the %llu bytes "
                           "already reserved when the trace begins",
                           (unsigned long long)o->cfg.allowed_bytes, (unsigned long long)st0.reserved_bytes);
        od_allocsim_reset_peaks(j->sim);
    }
    if (amap_init(&j->m, 4096)) return od_fail(err, OD_ERR_NOMEM, "out of memory");
    if (c->block_out) memset(c->block_out, 0, p->n * sizeof *c->block_out);
    j->top = od_allocsim_allocated_bytes(j->sim);
    res->peak_allocated_index = p->n;
    return OD_OK;
}

/* The entry at i: fed to the model (and i + 1 with it, for a free whose completion follows
 * at once). Returns the index of the last entry taken. */
static size_t job_entry(job *j, size_t i)
{
    rctx *c = &j->c;
    od_allocsim *sim = j->sim;
    od_replay_result *r = j->res;
    size_t n = c->n;
    od_trace_entry t_v = src_at(&j->s, i);
    const od_trace_entry *t = &t_v;
    uint64_t a = 0;
    int oom = 0;
    od_status status = OD_OK;
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
            if (amap_put(&j->m, t->addr, a)) status = OD_ERR_NOMEM;
        } else if (t->addr && j->m.n) {
            amap_del(&j->m, t->addr);
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
        int mapped = j->m.n && amap_get(&j->m, t->addr, &a);
        if (!mapped) {
            /* the model's block sits at the recorded address, or (wrapped trace)
             * was seeded there; otherwise the address is unknown */
            a = t->addr;
            if (!a) break;
        }
        if (a == 0) { /* the model failed this allocation: nothing to free */
            if (t->action == OD_ACT_FREE_COMPLETED) amap_del(&j->m, t->addr);
            break;
        }
        if (t->action == OD_ACT_FREE_REQUESTED) {
            /* the usual case: completion follows at once, no events to wait for */
            int immediate = i + 1 < n && src_action(&j->s, i + 1) == OD_ACT_FREE_COMPLETED &&
                            src_at(&j->s, i + 1).addr == t->addr;
            status = od_allocsim_free_request(sim, a, !immediate);
            if (status == OD_ERR_ARG) { r->unknown_frees++; status = OD_OK; }
            if (immediate) {
                r->events_replayed++;
                if (mapped) amap_del(&j->m, t->addr);
                i++;
            }
        } else {
            int ignored;
            status = od_allocsim_free_complete(sim, a, &ignored);
            if (status == OD_ERR_ARG) { r->unknown_frees++; status = OD_OK; }
            if (mapped) amap_del(&j->m, t->addr);
        }
        break;
    }
    case OD_ACT_SEGMENT_FREE:
    case OD_ACT_SEGMENT_UNMAP: {
        r->seg_recorded++;
        if (i < j->skip_until) break;
        size_t run_end;
        if (c->pool) {
            size_t k = i;
            while (k < n && is_release(src_action(&j->s, k))) k++;
            release_dead_pools(c, sim, i, k);
        }
        if (!releases_belong_to_request(c, sim, i, &run_end)) {
            /* torch.cuda.empty_cache(): applied where it stands */
            r->external_releases += run_end - i;
            od_allocsim_empty_cache(sim);
        }
        j->skip_until = run_end;
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
        if (now > j->top) {
            j->top = now;
            r->peak_allocated_index = i;
        }
    }
    if (status == OD_ERR_NOMEM) j->status = od_fail(&j->err, OD_ERR_NOMEM, "out of memory");
    else if (status) j->status = od_fail(&j->err, status, "the model rejected an event");
    return i;
}

/* The figures once the last entry is in. */
static void job_end(job *j)
{
    rctx *c = &j->c;
    od_replay_result *r = j->res;
    /* recorded events the model never produced */
    if (c->rc < c->n_rec && !r->has_mismatch) note_mismatch(c, c->rc, NULL);
    od_allocsim_get_stats(j->sim, &r->stats);
    if (j->top != r->stats.peak_allocated_bytes) r->peak_allocated_index = c->n;
    r->snapshot_allocated_bytes = j->p->snapshot_allocated;
    r->snapshot_reserved_bytes = j->p->snapshot_reserved;
}

/* Replay entries up to end (the whole trace for SIZE_MAX); done when the trace is over
 * or the job failed. */
static void job_run(job *j, size_t end)
{
    size_t n = j->c.n;
    while (!j->done) {
        if (j->status == OD_OK && j->s.failed) {
            od_status st = j->pass ? od_trace_pass_status(j->pass, &j->err) : OD_OK;
            j->status = st != OD_OK ? st : od_fail(&j->err, OD_ERR_IO, "the trace could not be read again");
        }
        if (j->status != OD_OK || j->i >= n) {
            if (j->status == OD_OK) job_end(j);
            j->done = 1;
            feed_detach(&j->fr);
            od_trace_pass_close(j->pass); /* the next job's pass may open now */
            j->pass = NULL;
            break;
        }
        if (j->i >= end) break;
        src_release(&j->s, j->i);
        j->i = job_entry(j, j->i) + 1;
    }
}

static void job_free(job *j)
{
    od_allocsim_free_sim(j->sim);
    amap_free(&j->m);
    free(j->c.live);
    src_free(&j->s);
    od_trace_pass_close(j->pass);
}

/* ---- several jobs over one trace ---- */

typedef struct {
    job *jobs;
    size_t n_jobs, first, stride; /* this thread's jobs: first, first + stride, ... */
} worker;

static void *worker_main(void *arg)
{
    worker *w = arg;
    for (size_t k = w->first; k < w->n_jobs; k += w->stride)
        job_run(&w->jobs[k], SIZE_MAX);
    return NULL;
}

/* A job that replays a streamed trace alone: through a pass of its own. */
static void job_own_pass(const plan *p, job *j)
{
    if ((j->status = od_trace_pass_open(p->snap, p->device, &j->pass, &j->err)) == OD_OK)
        src_init_stream(&j->s, p->n, pass_more, j->pass);
    else
        j->done = 1;
}

/* Held: the jobs spread over up to `threads` threads (the calling one among them), each
 * reading the trace at random. */
static void run_held(const plan *p, job *jobs, size_t n_jobs, unsigned threads)
{
    for (size_t k = 0; k < n_jobs; k++)
        if (!jobs[k].done) src_init_held(&jobs[k].s, p->tr);
    size_t n_workers = threads < n_jobs ? threads : n_jobs, started = 0;
    worker *w = n_workers > 1 ? calloc(n_workers, sizeof *w) : NULL;
    pthread_t *tid = n_workers > 1 ? calloc(n_workers, sizeof *tid) : NULL;
    for (size_t k = 0; w && tid && k < n_workers; k++)
        w[k] = (worker){ jobs, n_jobs, k, n_workers };
    while (w && tid && started + 1 < n_workers && pthread_create(&tid[started], NULL, worker_main, &w[started]) == 0)
        started++;
    if (w && tid && started + 1 == n_workers) {
        worker_main(&w[started]);
    } else { /* one thread, or what the threads that did not start would have run: here */
        for (size_t k = 0; k < n_jobs; k++)
            if (!started || k % n_workers >= started) job_run(&jobs[k], SIZE_MAX);
    }
    for (size_t k = 0; k < started; k++) pthread_join(tid[k], NULL);
    free(w);
    free(tid);
}

/* Streamed, several jobs: one reading (the calling thread), a thread per job. Without
 * threads, each job in turn with a pass of its own. */
static void run_streamed(const plan *p, job *jobs, size_t n_jobs, unsigned threads)
{
    size_t live = 0;
    for (size_t k = 0; k < n_jobs; k++) live += !jobs[k].done;
    feed f;
    memset(&f, 0, sizeof f);
    od_error err;
    pthread_t *tid = NULL;
    worker *w = NULL;
    uint8_t *made = NULL;
    size_t started = 0;
    if (threads > 1 && live > 1 && od_trace_pass_open(p->snap, p->device, &f.pass, &err) == OD_OK &&
        (tid = calloc(n_jobs, sizeof *tid)) && (w = calloc(n_jobs, sizeof *w)) && (made = calloc(n_jobs, 1)) &&
        pthread_mutex_init(&f.mu, NULL) == 0) {
        pthread_cond_init(&f.cv, NULL);
        for (size_t k = 0; k < n_jobs; k++)
            if (!jobs[k].done) {
                jobs[k].fr = (feed_reader){ &f, 0, 0, 0 };
                src_init_stream(&jobs[k].s, p->n, feed_more, &jobs[k].fr);
                f.readers++;
            }
        for (size_t k = 0; k < n_jobs; k++) {
            if (jobs[k].done) continue;
            w[k] = (worker){ jobs, k + 1, k, 1 };
            if (pthread_create(&tid[k], NULL, worker_main, &w[k]) != 0) {
                /* this job and the rest read passes of their own, after the others */
                for (size_t q = k; q < n_jobs; q++) feed_detach(&jobs[q].fr);
                break;
            }
            made[k] = 1;
            started = k + 1;
        }
        feed_run(&f);
        for (size_t k = 0; k < started; k++)
            if (made[k]) pthread_join(tid[k], NULL);
        od_status st = f.nomem ? OD_ERR_NOMEM : od_trace_pass_status(f.pass, &err);
        for (size_t k = 0; k < started && st != OD_OK; k++)
            if (jobs[k].status == OD_OK && jobs[k].s.failed) {
                jobs[k].status = st;
                if (st == OD_ERR_NOMEM) od_fail(&jobs[k].err, st, "out of memory");
                else jobs[k].err = err;
            }
        feed_free(&f);
        pthread_cond_destroy(&f.cv);
        pthread_mutex_destroy(&f.mu);
    }
    od_trace_pass_close(f.pass);
    free(tid);
    free(w);
    free(made);
    for (size_t k = started; k < n_jobs; k++) {
        job *j = &jobs[k];
        if (j->done) continue;
        src_free(&j->s);
        memset(&j->fr, 0, sizeof j->fr);
        job_own_pass(p, j);
        if (!j->done) job_run(j, SIZE_MAX);
    }
}

/* Run every started job to its end. */
static void run_jobs(const plan *p, job *jobs, size_t n_jobs, unsigned threads)
{
    if (!p->snap || !od_snapshot_is_streamed(p->snap))
        run_held(p, jobs, n_jobs, threads);
    else
        run_streamed(p, jobs, n_jobs, threads);
}

void od_replay_config_from_snapshot(const od_snapshot *snap, od_allocsim_config *cfg)
{
    od_allocsim_config_default(cfg);
    if (!snap->settings.present) return;
    cfg->conf = snap->settings.conf;
    if (cfg->max_split_size <= 0) cfg->max_split_size = -1;
}

/* The verdict on the replay itself: every recorded segment event matched, none left over. */
static int events_match(const od_replay_result *r)
{
    return !r->has_mismatch && r->seg_recorded == r->seg_simulated && r->seg_matched == r->seg_recorded;
}

od_status od_replay_trace(const od_device_trace *trace, const od_replay_opts *opts, od_replay_result *res,
                          od_error *err)
{
    plan p;
    memset(&p, 0, sizeof p);
    p.tr = trace;
    p.device = opts->device;
    p.n = trace->n_entries;
    p.complete = 1;
    od_status st = OD_OK;
    for (size_t i = 0; i < p.n && st == OD_OK; i++)
        if (is_seg(od_trace_action(trace, i))) {
            od_trace_entry t = od_trace_at(trace, i);
            if (!push_rec(&p, i, &t)) st = od_fail(err, OD_ERR_NOMEM, "out of memory");
        }
    job j;
    memset(&j, 0, sizeof j);
    if (st == OD_OK) {
        if ((st = job_start(&j, &p, opts, res)) == OD_OK) {
            src_init_held(&j.s, trace);
            job_run(&j, SIZE_MAX);
            st = j.status;
        }
        if (st != OD_OK && err) *err = j.err;
    }
    res->approximate = !events_match(res);
    job_free(&j);
    plan_free(&p);
    return st;
}

/* Two option sets that replay exactly alike. */
static int same_replay(const od_replay_opts *a, const od_replay_opts *b)
{
    return od_allocsim_config_same_policy(&a->cfg, &b->cfg) && a->cfg.allowed_bytes == b->cfg.allowed_bytes &&
           a->cfg.device_total_bytes == b->cfg.device_total_bytes && a->block_units_out == b->block_units_out;
}

od_status od_replay_snapshot_many(const od_snapshot *snap, const od_replay_opts *opts, size_t n, unsigned threads,
                                  od_replay_result *res, od_error *err)
{
    if (!snap->has_traces || snap->n_traces == 0)
        return od_fail(err, OD_ERR_FORMAT, "the snapshot has no allocation trace to replay "
                       "(record with torch.cuda.memory._record_memory_history)");
    if (n == 0) return OD_OK;
    for (size_t k = 1; k < n; k++)
        if (opts[k].device != opts[0].device)
            return od_fail(err, OD_ERR_ARG, "every replay of one run must replay the same device");
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
    od_allocsim_config own;
    od_replay_config_from_snapshot(snap, &own);
    /* The jobs: each option set, and for a what-if the replay under the run's own policy
     * with the same cap, which judges it (shared with an option set that is just that). */
    job *jobs = calloc(2 * n, sizeof *jobs);
    od_replay_opts *base = calloc(n, sizeof *base);
    od_replay_result *extra = calloc(n, sizeof *extra);
    size_t *judge = calloc(n, sizeof *judge);
    plan p;
    od_status st = jobs && base && extra && judge ? plan_make(&p, snap, tr, err)
                                                : od_fail(err, OD_ERR_NOMEM, "out of memory");
    size_t n_jobs = n, n_extra = 0;
    for (size_t k = 0; st == OD_OK && k < n; k++) {
        res[k].whatif = !od_allocsim_config_same_policy(&opts[k].cfg, &own);
        judge[k] = SIZE_MAX;
        if (!res[k].whatif || !p.complete) continue;
        base[k] = opts[k];
        base[k].cfg.conf = own.conf;
        base[k].block_units_out = NULL;
        for (size_t q = 0; q < n_jobs && judge[k] == SIZE_MAX; q++) {
            const od_replay_opts *o = q < n ? &opts[q] : jobs[q].opts;
            if (same_replay(o, &base[k])) judge[k] = q;
        }
        if (judge[k] == SIZE_MAX) {
            judge[k] = n_jobs;
            jobs[n_jobs].opts = &base[k];
            jobs[n_jobs].res = &extra[n_extra++];
            n_jobs++;
        }
    }
    for (size_t k = 0; st == OD_OK && k < n_jobs; k++) {
        job *j = &jobs[k];
        const od_replay_opts *o = k < n ? &opts[k] : j->opts;
        od_replay_result *r = k < n ? &res[k] : j->res;
        int whatif = k < n ? res[k].whatif : 0;
        if ((j->status = job_start(j, &p, o, r)) != OD_OK) j->done = 1;
        if (k < n) res[k].whatif = whatif;
    }
    if (st == OD_OK) run_jobs(&p, jobs, n_jobs, threads ? threads : 1);
    /* the first failure, in the order the option sets came */
    for (size_t k = 0; st == OD_OK && k < n_jobs; k++)
        if (jobs[k].status != OD_OK) {
            st = jobs[k].status;
            if (err) *err = jobs[k].err;
        }
    for (size_t k = 0; st == OD_OK && k < n; k++) {
        od_replay_result *r = &res[k];
        r->answerable = !(r->wrapped && r->whatif);
        if (r->wrapped) r->approximate = 1;
        else if (!r->whatif) r->approximate = !events_match(r);
        /* a what-if is as good as the model's replay of the run itself, under the same cap */
        else r->approximate = jobs[judge[k]].res->wrapped || !events_match(jobs[judge[k]].res);
    }
    for (size_t k = 0; jobs && k < n_jobs; k++) job_free(&jobs[k]);
    if (jobs && base && extra && judge) plan_free(&p);
    free(jobs);
    free(base);
    free(extra);
    free(judge);
    return st;
}

od_status od_replay_snapshot(const od_snapshot *snap, const od_replay_opts *opts, od_replay_result *res,
                             od_error *err)
{
    return od_replay_snapshot_many(snap, opts, 1, 1, res, err);
}

int od_replay_verified(const od_replay_result *r)
{
    return !r->wrapped && events_match(r);
}
