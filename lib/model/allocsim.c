/* allocsim.c - the caching allocator's policy, block by block.
 *
 * Mirrors the structure of torch 2.x DeviceCachingAllocator (malloc -> get_free_block ->
 * garbage_collect -> alloc_block -> release_available_cached_blocks -> release_cached_blocks
 * -> alloc_block, then alloc_found_block; free -> free_block with neighbour merging) so that
 * every tie-break lands where torch's lands. torch keeps a pool's free blocks in a std::set
 * ordered by (stream, size, address) (BlockComparatorSize); the model keeps them in size
 * classes, per stream, which gives the same order (see fset below). Unmapped ranges of
 * expandable segments live in a treap ordered by (stream, address). Blocks in use are
 * found by address through an open-addressing hash table. */
#include "model/allocsim.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct blk blk;
typedef struct pool pool;
typedef struct xseg xseg;

/* The fields a tree walk touches come first, and blocks are cache-line aligned, so a
 * walk step costs one line. */
struct blk {
    _Alignas(64) uint64_t stream;
    uint64_t size, addr;
    blk *l, *r;           /* treap children */
    uint32_t prio;
    uint8_t allocated, pending, mapped;
    blk *prev, *next;     /* neighbours inside the segment */
    pool *pool;
    xseg *es;             /* expandable segment, or NULL */
    int64_t gc_base;      /* pool's get_free_block count when the block was cached */
    uint64_t requested;
};

/* One entry of a size class: the block's key beside it, so that a search reads one array. */
typedef struct {
    uint64_t size, addr;
    blk *b;
} fent;

typedef struct {
    fent *v;              /* sorted by (size, addr) */
    uint32_t n, cap;
} fbin;

#define NBINS 448         /* size classes: 8 per power of two (fset_class) */

/* One stream's free blocks: a sorted array per size class, and which classes hold any. */
typedef struct {
    uint64_t stream;
    size_t count;
    uint64_t used[NBINS / 64];
    fbin bins[NBINS];
} fstream;

/* A pool's free mapped blocks in torch's order (stream, size, address): streams ascending,
 * then size classes ascending (a class holds only sizes above those of every lower class),
 * then each class's array. */
typedef struct {
    fstream **s;
    size_t n, cap;
} fset;

struct pool {
    fset blocks;          /* free mapped blocks: (stream, size, addr) */
    blk *unmapped;        /* unmapped ranges of expandable segments: (stream, addr) */
    int is_small;
    int freeable;         /* private pool whose owner is gone */
    uint64_t id;
    int64_t gc_calls;     /* get_free_blocks_call_count */
};

struct xseg {
    uint64_t base, size, page;
};

typedef struct {
    uint64_t id;
    pool small, large;
} private_pool;

struct od_allocsim {
    od_allocsim_config cfg;
    pool small, large;
    private_pool **priv;  /* individually allocated: blocks point at their pool */
    size_t n_priv, cap_priv;
    xseg **segs;          /* every expandable reservation made (freed with the simulator) */
    size_t n_segs, cap_segs;
    /* blocks in use (allocated or pending free), by address */
    blk **tab;
    size_t tab_mask, tab_count;
    size_t n_pending;
    uint64_t *early;      /* addresses whose pending free a release drained */
    size_t n_early, cap_early;
    /* free-list of block structs */
    blk *spare;
    void **chunks;
    size_t n_chunks, cap_chunks;
    uint32_t rng;
    uint64_t low_addr;    /* lowest address handed out or seen: synthetic ones go below */
    od_allocsim_addr_fn addr_fn;
    od_allocsim_event_fn event_fn;
    void *hook_ctx;
    int nomem;
    /* statistics */
    uint64_t allocated, reserved, requested, peak_alloc, peak_res, stranded_at_peak;
    uint64_t retries, ooms, dev_alloc, dev_free, n_segments;
};

enum { BY_SIZE, BY_ADDR };

/* ---- block storage ---- */

static blk *blk_new(od_allocsim *s)
{
    if (!s->spare) {
        enum { N = 1024 };
        if (s->n_chunks == s->cap_chunks) {
            size_t nc = s->cap_chunks ? s->cap_chunks * 2 : 16;
            void **c = realloc(s->chunks, nc * sizeof *c);
            if (!c) { s->nomem = 1; return NULL; }
            s->chunks = c;
            s->cap_chunks = nc;
        }
        blk *arr = aligned_alloc(64, N * sizeof *arr);
        if (!arr) { s->nomem = 1; return NULL; }
        s->chunks[s->n_chunks++] = arr;
        for (size_t i = 0; i < N; i++) {
            arr[i].next = s->spare;
            s->spare = &arr[i];
        }
    }
    blk *b = s->spare;
    s->spare = b->next;
    memset(b, 0, sizeof *b);
    s->rng ^= s->rng << 13;
    s->rng ^= s->rng >> 17;
    s->rng ^= s->rng << 5;
    b->prio = s->rng;
    b->mapped = 1;
    return b;
}

static void blk_del(od_allocsim *s, blk *b)
{
    b->next = s->spare;
    s->spare = b;
}

/* ---- treap keyed like torch's block sets ---- */

static int key_less(int mode, uint64_t st, uint64_t sz, uint64_t ad, const blk *b)
{
    if (st != b->stream) return st < b->stream;
    if (mode == BY_SIZE && sz != b->size) return sz < b->size;
    return ad < b->addr;
}

static int blk_less(int mode, const blk *a, const blk *b)
{
    return key_less(mode, a->stream, a->size, a->addr, b);
}

static blk *t_merge(blk *a, blk *b)
{
    if (!a) return b;
    if (!b) return a;
    if (a->prio > b->prio) {
        a->r = t_merge(a->r, b);
        return a;
    }
    b->l = t_merge(a, b->l);
    return b;
}

/* Split t into nodes < n (left) and nodes >= n (right). */
static void t_split(blk *t, const blk *n, int mode, blk **left, blk **right)
{
    if (!t) { *left = *right = NULL; return; }
    if (blk_less(mode, t, n)) {
        t_split(t->r, n, mode, &t->r, right);
        *left = t;
    } else {
        t_split(t->l, n, mode, left, &t->l);
        *right = t;
    }
}

static void t_insert(blk **root, blk *n, int mode)
{
    blk **p = root;
    while (*p && (*p)->prio > n->prio)
        p = blk_less(mode, n, *p) ? &(*p)->l : &(*p)->r;
    t_split(*p, n, mode, &n->l, &n->r);
    *p = n;
}

static void t_erase(blk **root, blk *n, int mode)
{
    blk **p = root;
    while (*p && *p != n)
        p = blk_less(mode, n, *p) ? &(*p)->l : &(*p)->r;
    if (*p) *p = t_merge(n->l, n->r);
    n->l = n->r = NULL;
}

/* Compare a key with a node: <0, 0, >0. */
static int key_cmp(int mode, uint64_t st, uint64_t sz, uint64_t ad, const blk *b)
{
    if (st != b->stream) return st < b->stream ? -1 : 1;
    if (mode == BY_SIZE && sz != b->size) return sz < b->size ? -1 : 1;
    if (ad != b->addr) return ad < b->addr ? -1 : 1;
    return 0;
}

/* Smallest node >= key. */
static blk *t_lower(blk *t, int mode, uint64_t st, uint64_t sz, uint64_t ad)
{
    blk *best = NULL;
    while (t) {
        if (key_cmp(mode, st, sz, ad, t) > 0) {
            t = t->r;
        } else {
            best = t;
            t = t->l;
        }
    }
    return best;
}

static blk *t_succ(blk *root, int mode, const blk *b)
{
    /* (stream, size, addr) is unique; strictly greater = >= (.., addr + 1) */
    return t_lower(root, mode, b->stream, b->size, b->addr + 1);
}


/* ---- free blocks by size class (torch's order: stream, size, address) ---- */

/* The class of a size: eight per power of two from 512 B (smaller sizes share class 0), so
 * a class's sizes all lie above those of the classes below it. */
static unsigned fset_class(uint64_t size)
{
    if (size < OD_SIM_MIN_BLOCK * 2) return 0;
    unsigned e = 63u - (unsigned)__builtin_clzll(size);
    return (e - 9) * 8 + (unsigned)((size >> (e - 3)) & 7);
}

/* The first entry of bin b at or above (size, addr). */
static uint32_t fbin_lower(const fbin *b, uint64_t size, uint64_t addr)
{
    uint32_t lo = 0, hi = b->n;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        const fent *e = &b->v[mid];
        if (e->size < size || (e->size == size && e->addr < addr)) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* The next class above c holding blocks, or NBINS. */
static unsigned fstream_next(const fstream *f, unsigned c)
{
    unsigned w = (c + 1) / 64;
    if (w >= NBINS / 64) return NBINS;
    uint64_t bits = f->used[w] & (~0ull << ((c + 1) % 64));
    while (!bits) {
        if (++w == NBINS / 64) return NBINS;
        bits = f->used[w];
    }
    return w * 64 + (unsigned)__builtin_ctzll(bits);
}

/* The next class below c holding blocks, or NBINS. */
static unsigned fstream_prev(const fstream *f, unsigned c)
{
    if (c == 0) return NBINS;
    unsigned w = (c - 1) / 64;
    uint64_t bits = f->used[w] & (~0ull >> (63 - (c - 1) % 64));
    while (!bits) {
        if (w-- == 0) return NBINS;
        bits = f->used[w];
    }
    return w * 64 + 63u - (unsigned)__builtin_clzll(bits);
}

/* The stream's first block at or above (size, addr), or NULL. */
static blk *fstream_lower(const fstream *f, uint64_t size, uint64_t addr)
{
    unsigned c = fset_class(size);
    const fbin *b = &f->bins[c];
    uint32_t i = b->n ? fbin_lower(b, size, addr) : 0;
    if (i < b->n) return b->v[i].b;
    c = fstream_next(f, c);
    return c < NBINS ? f->bins[c].v[0].b : NULL;
}

/* The stream's last block below (size, addr), or NULL. */
static blk *fstream_pred(const fstream *f, uint64_t size, uint64_t addr)
{
    unsigned c = fset_class(size);
    const fbin *b = &f->bins[c];
    uint32_t i = b->n ? fbin_lower(b, size, addr) : 0;
    if (i > 0) return b->v[i - 1].b;
    c = fstream_prev(f, c);
    return c < NBINS ? f->bins[c].v[f->bins[c].n - 1].b : NULL;
}

/* The index of the first stream >= stream. */
static size_t fset_stream_at(const fset *f, uint64_t stream)
{
    size_t lo = 0, hi = f->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (f->s[mid]->stream < stream) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static blk *fstream_first(const fstream *f)
{
    return fstream_lower(f, 0, 0);
}

/* The smallest block >= (stream, size, addr), on any stream, or NULL (std::set::lower_bound). */
static blk *fs_lower(const fset *f, uint64_t stream, uint64_t size, uint64_t addr)
{
    size_t i = fset_stream_at(f, stream);
    if (i < f->n && f->s[i]->stream == stream) {
        blk *b = f->s[i]->count ? fstream_lower(f->s[i], size, addr) : NULL;
        if (b) return b;
        i++;
    }
    for (; i < f->n; i++)
        if (f->s[i]->count) return fstream_first(f->s[i]);
    return NULL;
}

/* The largest block < (stream, size, addr), on any stream, or NULL. */
static blk *fs_pred(const fset *f, uint64_t stream, uint64_t size, uint64_t addr)
{
    size_t i = fset_stream_at(f, stream);
    if (i < f->n && f->s[i]->stream == stream && f->s[i]->count) {
        blk *b = fstream_pred(f->s[i], size, addr);
        if (b) return b;
    }
    while (i-- > 0)
        if (f->s[i]->count) return fstream_pred(f->s[i], UINT64_MAX, UINT64_MAX);
    return NULL;
}

/* The block after b in the set's order ((stream, size, addr) is unique). */
static blk *fs_succ(const fset *f, const blk *b)
{
    return fs_lower(f, b->stream, b->size, b->addr + 1);
}

static blk *fs_first(const fset *f)
{
    return fs_lower(f, 0, 0, 0);
}

/* Add b (not in the set); 0 when out of memory (the set unchanged). */
static int fs_insert(fset *f, blk *b)
{
    size_t i = fset_stream_at(f, b->stream);
    if (i == f->n || f->s[i]->stream != b->stream) {
        if (f->n == f->cap) {
            size_t nc = f->cap ? f->cap * 2 : 2;
            fstream **v = realloc(f->s, nc * sizeof *v);
            if (!v) return 0;
            f->s = v;
            f->cap = nc;
        }
        fstream *ns = calloc(1, sizeof *ns);
        if (!ns) return 0;
        ns->stream = b->stream;
        memmove(f->s + i + 1, f->s + i, (f->n - i) * sizeof *f->s);
        f->s[i] = ns;
        f->n++;
    }
    fstream *fs = f->s[i];
    unsigned c = fset_class(b->size);
    fbin *bin = &fs->bins[c];
    if (bin->n == bin->cap) {
        uint32_t nc = bin->cap ? bin->cap * 2 : 4;
        fent *v = realloc(bin->v, nc * sizeof *v);
        if (!v) return 0;
        bin->v = v;
        bin->cap = nc;
    }
    uint32_t at = fbin_lower(bin, b->size, b->addr);
    memmove(bin->v + at + 1, bin->v + at, (bin->n - at) * sizeof *bin->v);
    bin->v[at] = (fent){ b->size, b->addr, b };
    bin->n++;
    fs->used[c / 64] |= 1ull << (c % 64);
    fs->count++;
    return 1;
}

/* Remove b if it is in the set. */
static void fs_erase(fset *f, const blk *b)
{
    size_t i = fset_stream_at(f, b->stream);
    if (i == f->n || f->s[i]->stream != b->stream) return;
    fstream *fs = f->s[i];
    unsigned c = fset_class(b->size);
    fbin *bin = &fs->bins[c];
    uint32_t at = bin->n ? fbin_lower(bin, b->size, b->addr) : 0;
    if (at == bin->n || bin->v[at].b != b) return;
    memmove(bin->v + at, bin->v + at + 1, (bin->n - at - 1) * sizeof *bin->v);
    if (--bin->n == 0) fs->used[c / 64] &= ~(1ull << (c % 64));
    fs->count--;
}

static void fs_free(fset *f)
{
    for (size_t i = 0; i < f->n; i++) {
        for (unsigned c = 0; c < NBINS; c++) free(f->s[i]->bins[c].v);
        free(f->s[i]);
    }
    free(f->s);
}

/* Every block of the set, in no particular order: fn(b, ctx) until it returns nonzero. */
static blk *fs_find(const fset *f, int (*fn)(const blk *, void *), void *ctx)
{
    for (size_t i = 0; i < f->n; i++)
        for (unsigned c = 0; c < NBINS; c++)
            for (uint32_t k = 0; k < f->s[i]->bins[c].n; k++)
                if (fn(f->s[i]->bins[c].v[k].b, ctx)) return f->s[i]->bins[c].v[k].b;
    return NULL;
}

/* ---- blocks in use, by address ---- */

static size_t hslot(uint64_t a, size_t mask)
{
    a ^= a >> 29;
    a *= 0xbf58476d1ce4e5b9ull;
    a ^= a >> 32;
    return (size_t)a & mask;
}

static int tab_grow(od_allocsim *s)
{
    size_t n = (s->tab_mask + 1) * 2;
    blk **t = calloc(n, sizeof *t);
    if (!t) { s->nomem = 1; return -1; }
    for (size_t i = 0; i <= s->tab_mask; i++) {
        blk *b = s->tab[i];
        if (!b) continue;
        size_t j = hslot(b->addr, n - 1);
        while (t[j]) j = (j + 1) & (n - 1);
        t[j] = b;
    }
    free(s->tab);
    s->tab = t;
    s->tab_mask = n - 1;
    return 0;
}

static int tab_put(od_allocsim *s, blk *b)
{
    if ((s->tab_count + 1) * 2 > s->tab_mask + 1 && tab_grow(s)) return -1;
    size_t j = hslot(b->addr, s->tab_mask);
    while (s->tab[j]) j = (j + 1) & s->tab_mask;
    s->tab[j] = b;
    s->tab_count++;
    return 0;
}

static blk *tab_get(const od_allocsim *s, uint64_t addr)
{
    size_t j = hslot(addr, s->tab_mask);
    while (s->tab[j]) {
        if (s->tab[j]->addr == addr) return s->tab[j];
        j = (j + 1) & s->tab_mask;
    }
    return NULL;
}

static void tab_del(od_allocsim *s, uint64_t addr)
{
    size_t m = s->tab_mask, j = hslot(addr, m);
    while (s->tab[j] && s->tab[j]->addr != addr) j = (j + 1) & m;
    if (!s->tab[j]) return;
    s->tab[j] = NULL;
    s->tab_count--;
    /* backward-shift deletion keeps probe chains intact without tombstones */
    size_t k = (j + 1) & m;
    while (s->tab[k]) {
        size_t h = hslot(s->tab[k]->addr, m);
        int move = (j <= k) ? (h <= j || h > k) : (h <= j && h > k);
        if (move) {
            s->tab[j] = s->tab[k];
            s->tab[k] = NULL;
            j = k;
        }
        k = (k + 1) & m;
    }
}

/* ---- configuration ---- */

void od_allocsim_config_default(od_allocsim_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->max_split_size = -1;
}

static uint64_t max_split(const od_allocsim *s)
{
    return s->cfg.max_split_size < 0 ? UINT64_MAX : (uint64_t)s->cfg.max_split_size;
}

static int is_pow2(uint64_t v) { return v && !(v & (v - 1)); }
static int log2_floor(uint64_t v) { return 63 - __builtin_clzll(v); }

uint64_t od_allocsim_round_size(const od_allocsim_config *cfg, uint64_t size)
{
    if (size < OD_SIM_MIN_BLOCK) return OD_SIM_MIN_BLOCK;
    int idx = log2_floor(size) - 20;
    if (idx < 0) idx = 0;
    if (idx > 15) idx = 15;
    uint64_t div = cfg->roundup_power2_divisions[idx];
    if (div > 1 && size > OD_SIM_MIN_BLOCK * div) {
        /* roundup_power2_next_division: 1/div steps between two powers of two */
        if (is_pow2(size)) return size;
        uint64_t floor2 = 1ull << log2_floor(size);
        uint64_t step = floor2 >> log2_floor(div);
        if (step == 0) return floor2 << 1;
        uint64_t down = size & ~(step - 1);
        return down == size ? size : down + step;
    }
    return (size + OD_SIM_MIN_BLOCK - 1) / OD_SIM_MIN_BLOCK * OD_SIM_MIN_BLOCK;
}

static int parse_bool(const char *v, size_t n, int *out)
{
    if ((n == 4 && !strncmp(v, "True", 4)) || (n == 4 && !strncmp(v, "true", 4))) { *out = 1; return 0; }
    if ((n == 5 && !strncmp(v, "False", 5)) || (n == 5 && !strncmp(v, "false", 5))) { *out = 0; return 0; }
    return -1;
}

static int parse_u64(const char *v, size_t n, uint64_t *out)
{
    if (n == 0 || n > 18) return -1;
    uint64_t x = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isdigit((unsigned char)v[i])) return -1;
        x = x * 10 + (uint64_t)(v[i] - '0');
    }
    *out = x;
    return 0;
}

static od_status parse_divisions(od_allocsim_config *cfg, const char *v, size_t n, od_error *err)
{
    uint64_t d;
    if (n && v[0] != '[') {
        if (parse_u64(v, n, &d) || (d != 0 && !is_pow2(d)) || d > 1u << 20)
            return od_fail(err, OD_ERR_ARG, "roundup_power2_divisions: expected a power of two, got '%.*s'", (int)n, v);
        for (int i = 0; i < 16; i++) cfg->roundup_power2_divisions[i] = (uint32_t)d;
        return OD_OK;
    }
    if (n < 2 || v[n - 1] != ']')
        return od_fail(err, OD_ERR_ARG, "roundup_power2_divisions: expected N or [MB:N,...,>:N]");
    /* list form, keys are sizes in MiB: the first key also covers everything below it,
     * '>' covers everything above the previous key (as torch's parser does) */
    const char *p = v + 1, *end = v + n - 1;
    int first = 1, last = 0;
    while (p < end) {
        const char *q = memchr(p, ',', (size_t)(end - p));
        if (!q) q = end;
        const char *c = memchr(p, ':', (size_t)(q - p));
        if (!c || parse_u64(c + 1, (size_t)(q - c - 1), &d) || (d != 0 && !is_pow2(d)) || d > 1u << 20)
            return od_fail(err, OD_ERR_ARG, "roundup_power2_divisions: bad entry '%.*s'", (int)(q - p), p);
        if (c - p == 1 && *p == '>') {
            for (int i = last + (first ? 0 : 1); i < 16; i++) cfg->roundup_power2_divisions[i] = (uint32_t)d;
        } else {
            uint64_t mb;
            if (parse_u64(p, (size_t)(c - p), &mb) || !is_pow2(mb))
                return od_fail(err, OD_ERR_ARG, "roundup_power2_divisions: size '%.*s' is not a power of two", (int)(c - p), p);
            int idx = log2_floor(mb);
            if (idx > 15) idx = 15;
            if (first) for (int i = 0; i < idx; i++) cfg->roundup_power2_divisions[i] = (uint32_t)d;
            cfg->roundup_power2_divisions[idx] = (uint32_t)d;
            last = idx;
        }
        first = 0;
        p = q + 1;
    }
    return OD_OK;
}

od_status od_allocsim_config_parse(od_allocsim_config *cfg, const char *conf, od_error *err)
{
    const char *p = conf;
    while (p && *p) {
        while (*p == ' ' || *p == ',') p++;
        if (!*p) break;
        /* an entry ends at a comma outside brackets */
        const char *e = p;
        int depth = 0;
        while (*e && (depth || *e != ',')) {
            if (*e == '[') depth++;
            if (*e == ']' && depth) depth--;
            e++;
        }
        const char *c = memchr(p, ':', (size_t)(e - p));
        if (!c)
            return od_fail(err, OD_ERR_ARG, "allocator setting '%.*s': expected KEY:VALUE", (int)(e - p), p);
        size_t kn = (size_t)(c - p), vn = (size_t)(e - c - 1);
        const char *v = c + 1;
        uint64_t u;
        int b;
#define KEY(s) (kn == sizeof(s) - 1 && !strncmp(p, s, kn))
        if (KEY("max_split_size_mb")) {
            /* torch refuses values up to kLargeBuffer (20 MiB): such a limit could not hold a segment */
            if (parse_u64(v, vn, &u) || u <= 20 || u > (1ull << 40))
                return od_fail(err, OD_ERR_ARG, "max_split_size_mb: expected an integer > 20, got '%.*s'", (int)vn, v);
            cfg->max_split_size = (int64_t)(u << 20);
        } else if (KEY("max_non_split_rounding_mb")) {
            /* torch 2.11 refuses values below kLargeBuffer (20 MiB) */
            if (parse_u64(v, vn, &u) || u < 20 || u > (1ull << 40))
                return od_fail(err, OD_ERR_ARG, "max_non_split_rounding_mb: expected an integer >= 20, got '%.*s'", (int)vn, v);
            cfg->max_non_split_rounding = u << 20;
        } else if (KEY("garbage_collection_threshold")) {
            char buf[64];
            char *endp;
            if (vn == 0 || vn >= sizeof buf)
                return od_fail(err, OD_ERR_ARG, "garbage_collection_threshold: expected a number in (0, 1)");
            memcpy(buf, v, vn);
            buf[vn] = 0;
            double d = strtod(buf, &endp);
            if (*endp || !(d > 0.0 && d < 1.0))
                return od_fail(err, OD_ERR_ARG, "garbage_collection_threshold: expected a number in (0, 1), got '%s'", buf);
            cfg->garbage_collection_threshold = d;
        } else if (KEY("expandable_segments")) {
            if (parse_bool(v, vn, &b))
                return od_fail(err, OD_ERR_ARG, "expandable_segments: expected True or False, got '%.*s'", (int)vn, v);
            cfg->expandable_segments = b;
        } else if (KEY("roundup_power2_divisions")) {
            od_status st = parse_divisions(cfg, v, vn, err);
            if (st) return st;
        } else if (KEY("backend")) {
            if (!(vn == 6 && !strncmp(v, "native", 6)))
                return od_fail(err, OD_ERR_ARG, "backend:%.*s is not modelled (only backend:native)", (int)vn, v);
        } else if (KEY("release_lock_on_cudamalloc") || KEY("pinned_use_cuda_host_register") ||
                   KEY("pinned_use_background_threads") || KEY("graph_capture_record_stream_reuse")) {
            if (parse_bool(v, vn, &b))
                return od_fail(err, OD_ERR_ARG, "%.*s: expected True or False", (int)kn, p);
        } else if (KEY("pinned_num_register_threads") || KEY("pinned_reserve_segment_size_mb")) {
            if (parse_u64(v, vn, &u))
                return od_fail(err, OD_ERR_ARG, "%.*s: expected an integer", (int)kn, p);
        } else {
            return od_fail(err, OD_ERR_ARG, "unknown allocator setting '%.*s'", (int)kn, p);
        }
#undef KEY
        p = e;
    }
    return OD_OK;
}

/* The shortest %g text of d that strtod reads back as d. */
static void format_double(double d, char *buf, size_t size)
{
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, size, "%.*g", prec, d);
        if (strtod(buf, NULL) == d) return;
    }
}

size_t od_allocsim_config_format(const od_allocsim_config *cfg, char *buf, size_t size)
{
    size_t at = 0;
    if (size) buf[0] = 0;
    /* appends like snprintf, counting what does not fit */
#define ADD(...)                                                                             \
    do {                                                                                     \
        int n_ = snprintf(at < size ? buf + at : NULL, at < size ? size - at : 0, __VA_ARGS__); \
        if (n_ > 0) at += (size_t)n_;                                                        \
    } while (0)
#define SEP (at ? "," : "")
    if (cfg->expandable_segments) ADD("%sexpandable_segments:True", SEP);
    if (cfg->max_split_size > 0)
        ADD("%smax_split_size_mb:%llu", SEP, (unsigned long long)(cfg->max_split_size >> 20));
    if (cfg->max_non_split_rounding)
        ADD("%smax_non_split_rounding_mb:%llu", SEP, (unsigned long long)(cfg->max_non_split_rounding >> 20));
    if (cfg->garbage_collection_threshold > 0) {
        char g[32];
        format_double(cfg->garbage_collection_threshold, g, sizeof g);
        ADD("%sgarbage_collection_threshold:%s", SEP, g);
    }
    const uint32_t *d = cfg->roundup_power2_divisions;
    int any = 0, same = 1;
    for (int i = 0; i < 16; i++) {
        if (d[i]) any = 1;
        if (d[i] != d[0]) same = 0;
    }
    if (any && same) {
        ADD("%sroundup_power2_divisions:%u", SEP, d[0]);
    } else if (any) {
        /* every interval by its start in MiB: the list form sets exactly those entries */
        ADD("%sroundup_power2_divisions:[", SEP);
        for (int i = 0; i < 16; i++) ADD("%s%u:%u", i ? "," : "", 1u << i, d[i]);
        ADD("]");
    }
#undef SEP
#undef ADD
    return at;
}

int od_allocsim_config_same_policy(const od_allocsim_config *a, const od_allocsim_config *b)
{
    const uint64_t dflt_rounding = 20ull << 20;
    uint64_t ra = a->max_non_split_rounding ? a->max_non_split_rounding : dflt_rounding;
    uint64_t rb = b->max_non_split_rounding ? b->max_non_split_rounding : dflt_rounding;
    int64_t ma = a->max_split_size > 0 ? a->max_split_size : -1;
    int64_t mb = b->max_split_size > 0 ? b->max_split_size : -1;
    if (ma != mb || ra != rb || !a->expandable_segments != !b->expandable_segments ||
        a->garbage_collection_threshold != b->garbage_collection_threshold)
        return 0;
    for (int i = 0; i < 16; i++) {
        /* round_size divides only with more than one division */
        uint32_t da = a->roundup_power2_divisions[i] > 1 ? a->roundup_power2_divisions[i] : 0;
        uint32_t db = b->roundup_power2_divisions[i] > 1 ? b->roundup_power2_divisions[i] : 0;
        if (da != db) return 0;
    }
    return 1;
}

/* ---- create / destroy ---- */

od_status od_allocsim_create(const od_allocsim_config *cfg, od_allocsim **out, od_error *err)
{
    *out = NULL;
    od_allocsim *s = calloc(1, sizeof *s);
    if (!s) return od_fail(err, OD_ERR_NOMEM, "out of memory");
    s->cfg = *cfg;
    if (!s->cfg.max_non_split_rounding) s->cfg.max_non_split_rounding = 20ull << 20;
    if (!s->cfg.device_total_bytes) s->cfg.device_total_bytes = 80ull << 30;
    s->small.is_small = 1;
    s->tab_mask = 1023;
    s->tab = calloc(s->tab_mask + 1, sizeof *s->tab);
    if (!s->tab) { free(s); return od_fail(err, OD_ERR_NOMEM, "out of memory"); }
    s->rng = 0x9e3779b9u;
    s->low_addr = 0x7f0000000000ull;
    *out = s;
    return OD_OK;
}

void od_allocsim_free_sim(od_allocsim *sim)
{
    if (!sim) return;
    for (size_t i = 0; i < sim->n_chunks; i++) free(sim->chunks[i]);
    free(sim->chunks);
    free(sim->tab);
    fs_free(&sim->small.blocks);
    fs_free(&sim->large.blocks);
    for (size_t i = 0; i < sim->n_priv; i++) {
        fs_free(&sim->priv[i]->small.blocks);
        fs_free(&sim->priv[i]->large.blocks);
        free(sim->priv[i]);
    }
    free(sim->priv);
    for (size_t i = 0; i < sim->n_segs; i++) free(sim->segs[i]);
    free(sim->segs);
    free(sim->early);
    free(sim);
}

void od_allocsim_set_hooks(od_allocsim *sim, od_allocsim_addr_fn addr_fn,
                           od_allocsim_event_fn event_fn, void *ctx)
{
    sim->addr_fn = addr_fn;
    sim->event_fn = event_fn;
    sim->hook_ctx = ctx;
}

/* ---- helpers ---- */

static void emit(od_allocsim *s, od_seg_kind k, uint64_t addr, uint64_t size, const blk *b)
{
    if (!s->event_fn) return;
    od_seg_event ev = { (uint8_t)k, addr, size, b->stream, b->pool->id };
    s->event_fn(s->hook_ctx, &ev);
}

static void note_addr(od_allocsim *s, uint64_t addr)
{
    if (addr && addr < s->low_addr) s->low_addr = addr;
}

static uint64_t new_address(od_allocsim *s, od_seg_kind k, uint64_t size, uint64_t stream)
{
    uint64_t a = s->addr_fn ? s->addr_fn(s->hook_ctx, k, size, stream) : 0;
    if (!a) {
        /* the driver handed out descending addresses in the recordings; below the lowest
         * there is no room left, and handing out an address twice would corrupt the
         * model: 0, the device has no memory for it (cudaMalloc fails) */
        uint64_t align = OD_SIM_SMALL_BUFFER;
        if (s->low_addr < size || s->low_addr - size < align) return 0;
        a = (s->low_addr - size) & ~(align - 1);
    }
    note_addr(s, a);
    return a;
}

static pool *get_pool(od_allocsim *s, uint64_t id, int small)
{
    if (id == 0) return small ? &s->small : &s->large;
    for (size_t i = 0; i < s->n_priv; i++)
        if (s->priv[i]->id == id) return small ? &s->priv[i]->small : &s->priv[i]->large;
    if (s->n_priv == s->cap_priv) {
        size_t nc = s->cap_priv ? s->cap_priv * 2 : 4;
        private_pool **p = realloc(s->priv, nc * sizeof *p);
        if (!p) { s->nomem = 1; return NULL; }
        s->priv = p;
        s->cap_priv = nc;
    }
    private_pool *pp = calloc(1, sizeof *pp);
    if (!pp) { s->nomem = 1; return NULL; }
    s->priv[s->n_priv++] = pp;
    pp->id = id;
    pp->small.is_small = 1;
    pp->small.id = pp->large.id = id;
    return small ? &pp->small : &pp->large;
}

static void insert_free(od_allocsim *s, blk *b)
{
    b->gc_base = b->pool->gc_calls;
    if (!fs_insert(&b->pool->blocks, b)) s->nomem = 1;
}

static int is_split(const blk *b) { return b->prev || b->next; }
static int allocatable(const blk *b) { return b && !b->allocated && !b->pending; }

static uint64_t expandable_size(const blk *b)
{
    return b->size + (b->next && !b->next->mapped ? b->next->size : 0);
}

static void splice(blk *x, blk *before, blk *after)
{
    if (before) before->next = x;
    x->prev = before;
    if (after) after->prev = x;
    x->next = after;
}

static uint64_t try_merge(od_allocsim *s, blk *dst, blk *src)
{
    if (!src || src->allocated || src->pending || src->mapped != dst->mapped) return 0;
    if (dst->prev == src) {
        dst->addr = src->addr;
        dst->prev = src->prev;
        if (dst->prev) dst->prev->next = dst;
    } else {
        dst->next = src->next;
        if (dst->next) dst->next->prev = dst;
    }
    dst->size += src->size;
    if (src->mapped) fs_erase(&src->pool->blocks, src);
    else t_erase(&src->pool->unmapped, src, BY_ADDR);
    uint64_t n = src->size;
    blk_del(s, src);
    return n;
}

/* The candidate get_free_block would take, without taking it. */
static blk *find_free(const od_allocsim *s, pool *p, uint64_t stream, uint64_t size)
{
    blk *b = fs_lower(&p->blocks, stream, size, 0);
    if (!b || b->stream != stream) return NULL;
    if (b->es) {
        if (s->cfg.expandable_segments) {
            /* best fit counts the unmapped space an expandable block could grow into */
            blk *n = fs_succ(&p->blocks, b);
            while (b->es && n && n->stream == stream && expandable_size(n) < expandable_size(b)) {
                b = n;
                n = fs_succ(&p->blocks, n);
            }
        } else {
            do b = fs_succ(&p->blocks, b);
            while (b && b->es && b->stream == stream);
            if (!b || b->stream != stream) return NULL;
        }
    }
    uint64_t ms = max_split(s);
    /* oversize blocks serve only large requests, and only within max_non_split_rounding */
    if (size < ms && b->size >= ms) return NULL;
    if (size >= ms && b->size >= size + s->cfg.max_non_split_rounding) return NULL;
    return b;
}

static int gc_on(const od_allocsim *s)
{
    return s->cfg.allowed_bytes && s->cfg.garbage_collection_threshold > 0.0;
}

static blk *get_free_block(od_allocsim *s, pool *p, uint64_t stream, uint64_t size)
{
    /* block ages only advance while GC is enabled (torch counts calls only then) */
    if (gc_on(s)) p->gc_calls++;
    blk *b = find_free(s, p, stream, size);
    if (b) fs_erase(&p->blocks, b);
    return b;
}

static void release_block(od_allocsim *s, blk *b)
{
    fs_erase(&b->pool->blocks, b);
    s->reserved -= b->size;
    s->dev_free++;
    s->n_segments--;
    emit(s, OD_SEG_FREE, b->addr, b->size, b);
    blk_del(s, b);
}

static void unmap_block(od_allocsim *s, blk *b)
{
    xseg *es = b->es;
    uint64_t off = b->addr - es->base;
    uint64_t begin = (off + es->page - 1) / es->page * es->page + es->base;
    uint64_t end = (off + b->size) / es->page * es->page + es->base;
    if (begin >= end) return; /* only pages wholly inside the free block go */
    pool *p = b->pool;
    fs_erase(&p->blocks, b);
    uint64_t before = begin - b->addr, after = b->size - before - (end - begin);
    if (before) {
        blk *x = blk_new(s);
        if (!x) return;
        x->addr = b->addr; x->size = before; x->stream = b->stream; x->pool = p; x->es = es;
        splice(x, b->prev, b);
        insert_free(s, x);
    }
    if (after) {
        blk *x = blk_new(s);
        if (!x) return;
        x->addr = end; x->size = after; x->stream = b->stream; x->pool = p; x->es = es;
        splice(x, b, b->next);
        insert_free(s, x);
    }
    b->addr = begin;
    b->size = end - begin;
    b->mapped = 0;
    try_merge(s, b, b->prev);
    try_merge(s, b, b->next);
    t_insert(&p->unmapped, b, BY_ADDR);
    s->reserved -= end - begin;
    s->dev_free++;
    emit(s, OD_SEG_UNMAP, begin, end - begin, b);
}

static void release_blocks(od_allocsim *s, pool *p)
{
    blk *to_unmap[64];
    size_t n = 0;
    blk **list = to_unmap;
    size_t cap = 64;
    for (blk *b = fs_first(&p->blocks); b;) {
        blk *nx = fs_succ(&p->blocks, b);
        if (b->es) {
            /* unmapping changes the free set: gather first, as torch does */
            if (n == cap) {
                blk **nl = malloc(cap * 2 * sizeof *nl);
                if (!nl) { s->nomem = 1; break; }
                memcpy(nl, list, n * sizeof *nl);
                if (list != to_unmap) free(list);
                list = nl;
                cap *= 2;
            }
            list[n++] = b;
        } else if (!is_split(b)) {
            release_block(s, b);
        }
        b = nx;
    }
    for (size_t i = 0; i < n; i++) {
        blk *b = list[i];
        unmap_block(s, b);
        if (!b->mapped && !b->prev && !b->next) {
            /* the whole reservation is unmapped: torch releases the segment */
            t_erase(&p->unmapped, b, BY_ADDR);
            blk_del(s, b);
        }
    }
    if (list != to_unmap) free(list);
}

static void free_block(od_allocsim *s, blk *b)
{
    tab_del(s, b->addr);
    try_merge(s, b, b->prev);
    try_merge(s, b, b->next);
    insert_free(s, b);
}

static int early_add(od_allocsim *s, uint64_t addr)
{
    if (s->n_early == s->cap_early) {
        size_t nc = s->cap_early ? s->cap_early * 2 : 16;
        uint64_t *e = realloc(s->early, nc * sizeof *e);
        if (!e) { s->nomem = 1; return -1; }
        s->early = e;
        s->cap_early = nc;
    }
    s->early[s->n_early++] = addr;
    return 0;
}

/* synchronize_and_free_events: pending frees complete before a release. */
static void drain_pending(od_allocsim *s)
{
    while (s->n_pending) {
        blk *found = NULL;
        for (size_t i = 0; i <= s->tab_mask && !found; i++)
            if (s->tab[i] && s->tab[i]->pending) found = s->tab[i];
        if (!found) { s->n_pending = 0; break; }
        found->pending = 0;
        s->n_pending--;
        early_add(s, found->addr);
        free_block(s, found);
    }
}

static void release_cached_blocks(od_allocsim *s)
{
    drain_pending(s);
    release_blocks(s, &s->large);
    release_blocks(s, &s->small);
    for (size_t i = 0; i < s->n_priv; i++) {
        if (!s->priv[i]->small.freeable) continue;
        release_blocks(s, &s->priv[i]->small);
        release_blocks(s, &s->priv[i]->large);
    }
}

static int release_available_cached_blocks(od_allocsim *s, pool *p, uint64_t stream, uint64_t size)
{
    uint64_t ms = max_split(s);
    if (ms == UINT64_MAX) return 0;
    uint64_t key = size < ms ? ms : size;
    blk *it = fs_lower(&p->blocks, stream, key, 0);
    if (!it || it->stream != stream || it->es) {
        /* no single block is large enough: free oversize blocks, largest first */
        it = fs_pred(&p->blocks, stream, key, 0);
        if (!it) return 0;
        uint64_t released = 0;
        while (released < key && it->size >= ms && it->stream == stream) {
            blk *cur = it;
            it = fs_pred(&p->blocks, cur->stream, cur->size, cur->addr);
            if (!cur->es && !is_split(cur)) {
                released += cur->size;
                release_block(s, cur);
            }
            if (!it) break;
        }
        if (released < key) return 0;
    } else {
        if (is_split(it)) return 0;
        release_block(s, it);
    }
    return 1;
}

static void garbage_collect(od_allocsim *s)
{
    /* The parsers keep the threshold in (0, 1); a caller's other value must not overflow. */
    double thr_d = s->cfg.garbage_collection_threshold * (double)s->cfg.allowed_bytes;
    uint64_t thr = !(thr_d > 0) ? 0 : thr_d >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)thr_d;
    if (s->reserved <= thr) return;
    uint64_t target = s->reserved - thr, reclaimed = 0;
    pool *p = &s->large;
    uint64_t total_age = 0;
    int64_t count = 0;
    for (blk *b = fs_first(&p->blocks); b; b = fs_succ(&p->blocks, b))
        if (!is_split(b)) {
            total_age += (uint64_t)(int)(p->gc_calls - b->gc_base);
            count++;
        }
    if (!count) return;
    int freed = 1;
    while (reclaimed < target && freed && count > 0) {
        /* release blocks at least as old as the average first */
        double age_thr = (double)total_age / (double)count;
        freed = 0;
        for (blk *b = fs_first(&p->blocks); b;) {
            blk *nx = fs_succ(&p->blocks, b);
            int64_t age = (int)(p->gc_calls - b->gc_base);
            if (!is_split(b) && !b->es && (double)age >= age_thr) {
                freed = 1;
                reclaimed += b->size;
                total_age -= (uint64_t)age;
                count--;
                release_block(s, b);
            }
            b = nx;
        }
    }
}

static int map_block(od_allocsim *s, blk *b, uint64_t size)
{
    xseg *es = b->es;
    uint64_t mapped = (size + es->page - 1) / es->page * es->page;
    if (mapped > b->size) mapped = b->size;
    pool *p = b->pool;
    t_erase(&p->unmapped, b, BY_ADDR);
    b->mapped = 1;
    uint64_t at = b->addr;
    if (mapped < b->size) {
        blk *rem = blk_new(s);
        if (!rem) return 0;
        rem->addr = b->addr + mapped; rem->size = b->size - mapped; rem->stream = b->stream;
        rem->pool = p; rem->es = es; rem->mapped = 0;
        splice(rem, b, b->next);
        t_insert(&p->unmapped, rem, BY_ADDR);
        b->size = mapped;
    }
    try_merge(s, b, b->prev);
    try_merge(s, b, b->next);
    insert_free(s, b);
    s->reserved += mapped;
    s->dev_alloc++;
    emit(s, OD_SEG_MAP, at, mapped, b);
    return 1;
}

static blk *find_expandable_block(od_allocsim *s, pool *p, uint64_t stream, uint64_t size)
{
    for (blk *u = t_lower(p->unmapped, BY_ADDR, stream, 0, 0); u && u->stream == stream;
         u = t_succ(p->unmapped, BY_ADDR, u)) {
        /* a free block right before the unmapped range counts too */
        blk *c = allocatable(u->prev) ? u->prev : u;
        uint64_t bytes = 0;
        for (blk *x = c; x && bytes < size && allocatable(x); x = x->next) bytes += x->size;
        if (bytes >= size) return c;
    }
    /* new reservation of 9/8 of the device, in whole pages */
    uint64_t page = p->is_small ? OD_SIM_SMALL_BUFFER : OD_SIM_LARGE_BUFFER;
    uint64_t tot = s->cfg.device_total_bytes;
    uint64_t pages = (tot + tot / 8 + page - 1) / page;
    if (s->n_segs == s->cap_segs) {
        size_t nc = s->cap_segs ? s->cap_segs * 2 : 8;
        xseg **v = realloc(s->segs, nc * sizeof *v);
        if (!v) { s->nomem = 1; return NULL; }
        s->segs = v;
        s->cap_segs = nc;
    }
    xseg *es = calloc(1, sizeof *es);
    blk *c = es ? blk_new(s) : NULL;
    if (!c) { free(es); s->nomem = 1; return NULL; }
    es->page = page;
    es->size = pages * page;
    es->base = new_address(s, OD_SEG_MAP, es->size, stream);
    if (!es->base) { /* no address space for the reservation */
        free(es);
        blk_del(s, c);
        return NULL;
    }
    s->segs[s->n_segs++] = es;
    c->addr = es->base; c->size = es->size; c->stream = stream; c->pool = p; c->es = es;
    c->mapped = 0;
    t_insert(&p->unmapped, c, BY_ADDR);
    return c;
}

static blk *try_allocate_expandable(od_allocsim *s, pool *p, uint64_t stream, uint64_t size)
{
    blk *c = find_expandable_block(s, p, stream, size);
    if (!c) return NULL;
    if (!c->mapped && !map_block(s, c, c->size < size ? c->size : size)) return NULL;
    while (c->size < size) {
        blk *n = c->next;
        if (!n || n->mapped || n->allocated) return NULL;
        uint64_t rem = size - c->size;
        if (!map_block(s, n, rem < n->size ? rem : n->size)) return NULL;
        c = n;
    }
    fs_erase(&p->blocks, c);
    return c;
}

static blk *alloc_block(od_allocsim *s, pool *p, uint64_t stream, uint64_t size,
                        uint64_t alloc_size, int retry, unsigned flags)
{
    if (retry) s->retries++;
    /* the cap is checked against the segment size, even for expandable segments */
    if (s->cfg.allowed_bytes && s->reserved + alloc_size > s->cfg.allowed_bytes) return NULL;
    if (flags & OD_SIM_DEVICE_FULL) return NULL;
    /* torch 2.11 (alloc_block): expandable segments serve graph private pools too; only
     * MemPools with their own allocator opt out, and those are not modelled */
    if (s->cfg.expandable_segments)
        return try_allocate_expandable(s, p, stream, size);
    blk *b = blk_new(s);
    if (!b) return NULL;
    b->addr = new_address(s, OD_SEG_ALLOC, alloc_size, stream);
    if (!b->addr) {
        blk_del(s, b);
        return NULL;
    }
    b->size = alloc_size;
    b->stream = stream;
    b->pool = p;
    s->reserved += alloc_size;
    s->dev_alloc++;
    s->n_segments++;
    emit(s, OD_SEG_ALLOC, b->addr, alloc_size, b);
    return b;
}

static void update_peaks(od_allocsim *s)
{
    if (s->allocated > s->peak_alloc) s->peak_alloc = s->allocated;
    if (s->reserved > s->peak_res) {
        s->peak_res = s->reserved;
        s->stranded_at_peak = s->reserved - s->allocated;
    }
}

od_status od_allocsim_malloc(od_allocsim *s, uint64_t size, uint64_t stream, uint64_t pool_id,
                             unsigned flags, uint64_t *addr, int *oom)
{
    *addr = 0;
    *oom = 0;
    if (size == 0) return OD_OK; /* torch hands out no block for 0 bytes */
    if (size > (1ull << 56)) {   /* no device has this: cudaMalloc fails */
        s->ooms++;
        *oom = 1;
        return OD_OK;
    }
    uint64_t rs = od_allocsim_round_size(&s->cfg, size);
    pool *p = get_pool(s, pool_id, rs <= OD_SIM_SMALL_SIZE);
    if (!p) return OD_ERR_NOMEM;
    uint64_t alloc_size = od_allocsim_segment_size(rs);
    blk *b = get_free_block(s, p, stream, rs);
    if (!b) {
        if (gc_on(s)) garbage_collect(s);
        b = alloc_block(s, p, stream, rs, alloc_size, 0, flags);
        if (!b && release_available_cached_blocks(s, p, stream, rs))
            b = alloc_block(s, p, stream, rs, alloc_size, 0, flags);
        /* malloc: release_cached_blocks only while captures_underway is empty (a private
         * pool is drawn from only during a capture) */
        if (!b && pool_id == 0 && !(flags & OD_SIM_CAPTURING)) {
            release_cached_blocks(s);
            b = alloc_block(s, p, stream, rs, alloc_size, 1, flags);
        }
    }
    if (s->nomem) return OD_ERR_NOMEM;
    if (!b) {
        s->ooms++;
        *oom = 1;
        update_peaks(s);
        return OD_OK;
    }
    /* alloc_found_block: take the low end, split off the rest when the pool's rule allows */
    uint64_t rem = b->size - rs;
    int split = (p->is_small || s->cfg.expandable_segments) ? rem >= OD_SIM_MIN_BLOCK
                                                            : (rs < max_split(s) && rem > OD_SIM_SMALL_SIZE);
    if (split) {
        blk *nb = blk_new(s);
        if (!nb) return OD_ERR_NOMEM;
        nb->addr = b->addr; nb->size = rs; nb->stream = b->stream; nb->pool = p; nb->es = b->es;
        nb->prev = b->prev;
        if (nb->prev) nb->prev->next = nb;
        nb->next = b;
        b->prev = nb;
        b->addr += rs;
        b->size -= rs;
        insert_free(s, b);
        b = nb;
    }
    b->allocated = 1;
    b->requested = size;
    if (tab_put(s, b)) return OD_ERR_NOMEM;
    s->allocated += b->size;
    s->requested += size;
    update_peaks(s);
    *addr = b->addr;
    return OD_OK;
}

od_status od_allocsim_free_request(od_allocsim *s, uint64_t addr, int deferred)
{
    blk *b = tab_get(s, addr);
    if (!b || !b->allocated) return OD_ERR_ARG;
    b->allocated = 0;
    s->allocated -= b->size;
    s->requested -= b->requested;
    if (deferred) {
        b->pending = 1;
        s->n_pending++;
    } else {
        free_block(s, b);
    }
    return s->nomem ? OD_ERR_NOMEM : OD_OK;
}

od_status od_allocsim_free_complete(od_allocsim *s, uint64_t addr, int *ignored)
{
    int dummy;
    if (!ignored) ignored = &dummy;
    *ignored = 0;
    for (size_t i = 0; i < s->n_early; i++) {
        if (s->early[i] == addr) {
            s->early[i] = s->early[--s->n_early];
            *ignored = 1;
            return OD_OK;
        }
    }
    blk *b = tab_get(s, addr);
    if (!b) return OD_ERR_ARG;
    if (b->allocated) return od_allocsim_free_request(s, addr, 0);
    b->pending = 0;
    s->n_pending--;
    free_block(s, b);
    return s->nomem ? OD_ERR_NOMEM : OD_OK;
}

od_status od_allocsim_free(od_allocsim *s, uint64_t addr)
{
    return od_allocsim_free_request(s, addr, 0);
}

void od_allocsim_empty_cache(od_allocsim *s)
{
    release_cached_blocks(s);
}

void od_allocsim_release_pool(od_allocsim *s, uint64_t id)
{
    for (size_t i = 0; i < s->n_priv; i++)
        if (s->priv[i]->id == id) s->priv[i]->small.freeable = s->priv[i]->large.freeable = 1;
}

int od_allocsim_would_release(const od_allocsim *s, uint64_t size, uint64_t stream,
                              uint64_t pool_id, unsigned flags)
{
    if (size == 0) return 0;
    uint64_t rs = od_allocsim_round_size(&s->cfg, size);
    pool *p = NULL;
    if (pool_id == 0) {
        p = rs <= OD_SIM_SMALL_SIZE ? (pool *)&s->small : (pool *)&s->large;
    } else {
        for (size_t i = 0; i < s->n_priv; i++)
            if (s->priv[i]->id == pool_id)
                p = rs <= OD_SIM_SMALL_SIZE ? &s->priv[i]->small : &s->priv[i]->large;
    }
    if (p && find_free(s, p, stream, rs)) return 0;
    if (flags & OD_SIM_DEVICE_FULL) return 1;
    if (!s->cfg.allowed_bytes) return 0;
    if (gc_on(s) && s->reserved > (uint64_t)(s->cfg.garbage_collection_threshold * (double)s->cfg.allowed_bytes))
        return 1;
    return s->reserved + od_allocsim_segment_size(rs) > s->cfg.allowed_bytes;
}

uint64_t od_allocsim_block_size(const od_allocsim *s, uint64_t addr)
{
    const blk *b = tab_get(s, addr);
    return b ? b->size : 0;
}

uint64_t od_allocsim_allocated_bytes(const od_allocsim *s)
{
    return s->allocated;
}

/* ---- seeding a state that predates the trace ---- */

od_status od_allocsim_seed_segment(od_allocsim *s, uint64_t addr, uint64_t size,
                                   uint64_t stream, uint64_t pool_id, int small_pool)
{
    if (!size || addr + size < addr) return OD_ERR_ARG;
    pool *p = get_pool(s, pool_id, small_pool);
    blk *b = p ? blk_new(s) : NULL;
    if (!b) return OD_ERR_NOMEM;
    b->addr = addr; b->size = size; b->stream = stream;
    b->pool = p;
    insert_free(s, b);
    s->reserved += size;
    s->n_segments++;
    note_addr(s, addr);
    update_peaks(s);
    return OD_OK;
}

typedef struct {
    uint64_t addr, size;
} span;

static int contains(const blk *b, void *ctx)
{
    const span *x = ctx;
    return b->addr <= x->addr && x->addr + x->size <= b->addr + b->size;
}

/* The free block holding [addr, addr + size) (free blocks are disjoint), or NULL. */
static blk *find_containing(const fset *f, uint64_t addr, uint64_t size)
{
    span x = { addr, size };
    return fs_find(f, contains, &x);
}

od_status od_allocsim_seed_block(od_allocsim *s, uint64_t addr, uint64_t size)
{
    if (!size || addr + size < addr) return OD_ERR_ARG;
    blk *f = find_containing(&s->large.blocks, addr, size);
    if (!f) f = find_containing(&s->small.blocks, addr, size);
    for (size_t i = 0; !f && i < s->n_priv; i++) {
        f = find_containing(&s->priv[i]->large.blocks, addr, size);
        if (!f) f = find_containing(&s->priv[i]->small.blocks, addr, size);
    }
    if (!f) return OD_ERR_ARG;
    pool *p = f->pool;
    fs_erase(&p->blocks, f);
    if (f->addr < addr) {
        blk *x = blk_new(s);
        if (!x) return OD_ERR_NOMEM;
        x->addr = f->addr; x->size = addr - f->addr; x->stream = f->stream; x->pool = p;
        splice(x, f->prev, f);
        insert_free(s, x);
        f->size -= x->size;
        f->addr = addr;
    }
    if (f->size > size) {
        blk *x = blk_new(s);
        if (!x) return OD_ERR_NOMEM;
        x->addr = addr + size; x->size = f->size - size; x->stream = f->stream; x->pool = p;
        splice(x, f, f->next);
        insert_free(s, x);
        f->size = size;
    }
    f->allocated = 1;
    f->requested = size;
    if (tab_put(s, f)) return OD_ERR_NOMEM;
    s->allocated += size;
    s->requested += size;
    update_peaks(s);
    return OD_OK;
}

/* ---- reading the state ---- */

typedef struct {
    uint64_t largest, split_free, free_total;
} free_stats;

static int add_stats(const blk *b, void *ctx)
{
    free_stats *x = ctx;
    if (b->size > x->largest) x->largest = b->size;
    if (b->prev || b->next) x->split_free += b->size;
    x->free_total += b->size;
    return 0;
}

void od_allocsim_get_stats(const od_allocsim *s, od_allocsim_stats *st)
{
    memset(st, 0, sizeof *st);
    st->allocated_bytes = s->allocated;
    st->reserved_bytes = s->reserved;
    st->requested_bytes = s->requested;
    st->peak_allocated_bytes = s->peak_alloc;
    st->peak_reserved_bytes = s->peak_res;
    st->stranded_at_peak_bytes = s->stranded_at_peak;
    st->num_alloc_retries = s->retries;
    st->num_ooms = s->ooms;
    st->num_device_alloc = s->dev_alloc;
    st->num_device_free = s->dev_free;
    st->num_segments = s->n_segments;
    free_stats x = { 0, 0, 0 };
    fs_find(&s->small.blocks, add_stats, &x);
    fs_find(&s->large.blocks, add_stats, &x);
    for (size_t i = 0; i < s->n_priv; i++) {
        fs_find(&s->priv[i]->small.blocks, add_stats, &x);
        fs_find(&s->priv[i]->large.blocks, add_stats, &x);
    }
    st->largest_free_block = x.largest;
    st->inactive_split_bytes = x.split_free;
    st->cached_free_bytes = x.free_total;
}

void od_allocsim_reset_peaks(od_allocsim *s)
{
    s->peak_alloc = s->allocated;
    s->peak_res = s->reserved;
    s->stranded_at_peak = s->reserved - s->allocated;
}
