/* tracestore.c - trace entries as (key, time offset) pairs; see tracestore.h. A compact
 * stream (tracepass.h) keeps the same keys and, per entry, a byte or two: which key, as
 * the loop it repeats predicts it, and the time since the entry before. */
#include "oomdoc/tracestore.h"

#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/u64map.h"
#include "read/tracepass.h"

struct od_trace_store {
    od_trace_slot *slots;
    size_t n, cap;
    uint64_t *base_us;           /* per chunk */
    size_t n_base, cap_base;
    od_trace_key *keys;
    size_t n_keys, cap_keys;
    uint32_t *index;             /* open addressing: key number + 1, 0 empty */
    size_t index_cap;            /* a power of two, at least twice n_keys */
    uint64_t *far;               /* (entry, time) pairs */
    size_t n_far, cap_far;
    od_u64map addr_ids;          /* address -> its number */
    size_t n_addrs;
    size_t cap_next;
    uint32_t (*next)[2];         /* by key: the keys of the entries that followed it the last
                                    two times it was followed by another (UINT32_MAX none),
                                    the guesses tried before the index */
    uint32_t last;               /* the key of the last entry added (UINT32_MAX: none) */
    int stream;                  /* a compact stream: bytes instead of slots */
    unsigned char *bytes;        /* per entry: a header byte, then varints (stream_put) */
    size_t n_bytes, cap_bytes;
    uint64_t last_us;            /* the time of the last entry added */
};

/* Independent multiplies (they run in parallel), folded; the index takes the low bits. */
static uint64_t key_hash(const od_trace_key *k)
{
    uint64_t h = k->addr * 0x9e3779b97f4a7c15ull ^ k->size * 0xff51afd7ed558ccdull ^
                 (((uint64_t)k->stack << 8) | k->action) * 0xc4ceb9fe1a85ec53ull ^
                 k->stream * 0xd6e8feb86659fd93ull ^ k->device_free;
    return h ^ (h >> 31) ^ (h >> 47);
}

static int key_equal(const od_trace_key *a, const od_trace_key *b)
{
    return a->addr == b->addr && a->size == b->size && a->stream == b->stream &&
           a->device_free == b->device_free && a->stack == b->stack && a->action == b->action;
}

/* Double the index table and re-insert every key; 0 when out of memory. */
static int rehash(od_trace_store *s)
{
    size_t cap = s->index_cap ? s->index_cap * 2 : 1024;
    uint32_t *ix = calloc(cap, sizeof *ix);
    if (!ix)
        return 0;
    for (size_t k = 0; k < s->n_keys; k++) {
        size_t at = (size_t)key_hash(&s->keys[k]) & (cap - 1);
        while (ix[at])
            at = (at + 1) & (cap - 1);
        ix[at] = (uint32_t)(k + 1);
    }
    free(s->index);
    s->index = ix;
    s->index_cap = cap;
    return 1;
}

/* The number of key k, added when new; UINT32_MAX when out of memory or full. */
static uint32_t intern(od_trace_store *s, const od_trace_key *k)
{
    if ((s->n_keys + 1) * 2 > s->index_cap && !rehash(s))
        return UINT32_MAX;
    size_t at = (size_t)key_hash(k) & (s->index_cap - 1);
    while (s->index[at]) {
        uint32_t id = s->index[at] - 1;
        if (key_equal(&s->keys[id], k))
            return id;
        at = (at + 1) & (s->index_cap - 1);
    }
    if (s->n_keys >= UINT32_MAX - 1 || !od_grow((void **)&s->keys, &s->cap_keys, s->n_keys + 1, sizeof *s->keys) ||
        !od_grow((void **)&s->next, &s->cap_next, s->n_keys + 1, sizeof *s->next))
        return UINT32_MAX;
    int found;
    uint32_t *aid = od_u64map_slot(&s->addr_ids, k->addr, &found);
    if (!aid)
        return UINT32_MAX;
    if (!found)
        *aid = (uint32_t)s->n_addrs++;
    s->next[s->n_keys][0] = s->next[s->n_keys][1] = UINT32_MAX;
    s->keys[s->n_keys] = *k;
    s->keys[s->n_keys].addr_id = *aid;
    s->index[at] = (uint32_t)(s->n_keys + 1);
    return (uint32_t)s->n_keys++;
}

od_trace_store *od_trace_store_new(void)
{
    od_trace_store *s = calloc(1, sizeof(od_trace_store));
    if (s)
        s->last = UINT32_MAX;
    return s;
}

/* The key of e, found from the guesses or the index (added when new); UINT32_MAX when out of
 * memory or full. *how: 0 or 1 for the first or second guess, 2 from the index. */
static uint32_t key_of(od_trace_store *s, const od_trace_entry *e, unsigned *how)
{
    od_trace_key k;
    memset(&k, 0, sizeof k); /* the padding too: keys are kept as they are compared */
    k.addr = e->addr;
    k.size = e->size;
    k.stream = e->stream;
    k.device_free = e->device_free;
    k.stack = e->stack;
    k.action = e->action;
    /* A loop repeats its sequence of entries: the key that followed the last entry's key
     * the previous time is usually this one, and comparing it costs less than hashing. */
    uint32_t id = s->last != UINT32_MAX ? s->next[s->last][0] : UINT32_MAX;
    *how = 0;
    if (id != UINT32_MAX && !key_equal(&s->keys[id], &k)) {
        id = s->next[s->last][1];
        *how = 1;
        if (id != UINT32_MAX && !key_equal(&s->keys[id], &k))
            id = UINT32_MAX;
    }
    if (id == UINT32_MAX) {
        *how = 2;
        id = intern(s, &k);
    }
    return id;
}

/* Remember that key id followed the last entry's key (the guesses of key_of). */
static void follow(uint32_t (*next)[2], uint32_t *last, uint32_t id)
{
    if (*last != UINT32_MAX && next[*last][0] != id) {
        next[*last][1] = next[*last][0];
        next[*last][0] = id;
    }
    *last = id;
}

static unsigned char *put_varint(unsigned char *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    *p++ = (unsigned char)v;
    return p;
}

/* Stream encoding of one entry: a header byte, low 2 bits the key (0, 1: the first or
 * second guess; 2: its number follows as a varint), high 6 bits the time since the entry
 * before (0..61 us; 62: that minus 62 follows as a varint; 63: the time went back, by the
 * varint that follows). At most 1 + 5 + 10 bytes. */
#define DT_SHORT 62u
#define DT_LONG 62u
#define DT_BACK 63u

static int stream_put(od_trace_store *s, const od_trace_entry *e, uint32_t id, unsigned how)
{
    if (s->cap_bytes - s->n_bytes < 16 && !od_grow((void **)&s->bytes, &s->cap_bytes, s->n_bytes + 16, 1))
        return 0;
    unsigned char *p = s->bytes + s->n_bytes, *h = p++;
    uint64_t t = e->time_us;
    unsigned dt = t >= s->last_us ? (t - s->last_us < DT_SHORT ? (unsigned)(t - s->last_us) : DT_LONG) : DT_BACK;
    *h = (unsigned char)(how | dt << 2);
    if (how == 2)
        p = put_varint(p, id);
    if (dt == DT_LONG)
        p = put_varint(p, t - s->last_us - DT_SHORT);
    else if (dt == DT_BACK)
        p = put_varint(p, s->last_us - t);
    s->n_bytes = (size_t)(p - s->bytes);
    s->last_us = t;
    return 1;
}

int od_trace_store_add(od_trace_store *s, const od_trace_entry *e)
{
    if (s->n >= UINT32_MAX || (!s->stream && s->n == s->cap &&
                                !od_grow((void **)&s->slots, &s->cap, s->n + 1, sizeof *s->slots)))
        return 0;
    size_t chunk = s->n >> OD_TRACE_CHUNK_BITS;
    if (!s->stream && chunk >= s->n_base) {
        if (!od_grow((void **)&s->base_us, &s->cap_base, chunk + 1, sizeof *s->base_us))
            return 0;
        s->base_us[chunk] = e->time_us;
        s->n_base = chunk + 1;
    }
    unsigned how;
    uint32_t id = key_of(s, e, &how);
    if (id == UINT32_MAX)
        return 0;
    if (s->stream) {
        if (!stream_put(s, e, id, how))
            return 0;
        s->n++;
        follow(s->next, &s->last, id);
        return 1;
    }
    int64_t dt = (int64_t)(e->time_us - s->base_us[chunk]);
    int near = e->time_us - s->base_us[chunk] + (uint64_t)INT32_MAX < (uint64_t)INT32_MAX * 2;
    if (!near) {
        if (!od_grow((void **)&s->far, &s->cap_far, s->n_far * 2 + 2, sizeof *s->far))
            return 0;
        s->far[s->n_far * 2] = s->n;
        s->far[s->n_far * 2 + 1] = e->time_us;
        s->n_far++;
    }
    s->slots[s->n].key = id;
    s->slots[s->n].dt_us = near ? (int32_t)dt : OD_TRACE_FAR;
    s->n++;
    follow(s->next, &s->last, id);
    return 1;
}

od_trace_store *od_trace_store_new_stream(void)
{
    od_trace_store *s = od_trace_store_new();
    if (s)
        s->stream = 1;
    return s;
}

struct od_trace_stream {
    const od_trace_store *s;
    size_t at;                   /* into s->bytes */
    size_t i;                    /* entries read */
    uint32_t last;
    uint64_t last_us;
    uint32_t (*next)[2];         /* the guesses, as they were when each entry was added */
};

od_trace_stream *od_trace_stream_open(const od_trace_store *s)
{
    od_trace_stream *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->s = s;
    r->last = UINT32_MAX;
    r->next = malloc((s->n_keys ? s->n_keys : 1) * sizeof *r->next);
    if (!r->next) {
        free(r);
        return NULL;
    }
    memset(r->next, 0xff, (s->n_keys ? s->n_keys : 1) * sizeof *r->next);
    return r;
}

static uint64_t get_varint(const unsigned char *p, size_t *at)
{
    uint64_t v = 0;
    for (unsigned shift = 0;; shift += 7) {
        unsigned char b = p[(*at)++];
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return v;
    }
}

int od_trace_stream_next(od_trace_stream *r, od_trace_entry *e)
{
    const od_trace_store *s = r->s;
    if (r->i >= s->n)
        return 0;
    unsigned char h = s->bytes[r->at++];
    unsigned how = h & 3, dt = h >> 2;
    uint32_t id = how == 2 ? (uint32_t)get_varint(s->bytes, &r->at) : r->next[r->last][how];
    if (dt == DT_LONG)
        r->last_us += get_varint(s->bytes, &r->at) + DT_SHORT;
    else if (dt == DT_BACK)
        r->last_us -= get_varint(s->bytes, &r->at);
    else
        r->last_us += dt;
    follow(r->next, &r->last, id);
    const od_trace_key *k = &s->keys[id];
    e->addr = k->addr;
    e->size = k->size;
    e->stream = k->stream;
    e->device_free = k->device_free;
    e->stack = k->stack;
    e->action = k->action;
    e->time_us = r->last_us;
    r->i++;
    return 1;
}

void od_trace_stream_close(od_trace_stream *r)
{
    if (!r)
        return;
    free(r->next);
    free(r);
}

od_trace_store *od_trace_store_of(const od_trace_entry *e, size_t n)
{
    od_trace_store *s = od_trace_store_new();
    for (size_t i = 0; s && i < n; i++)
        if (!od_trace_store_add(s, &e[i])) {
            od_trace_store_free(s);
            return NULL;
        }
    return s;
}

size_t od_trace_store_count(const od_trace_store *s)
{
    return s ? s->n : 0;
}

void od_trace_store_view(const od_trace_store *s, size_t first, size_t n, int64_t device, od_device_trace *out)
{
    memset(out, 0, sizeof *out);
    out->device = device;
    if (!s || n == 0)
        return;
    out->n_entries = n;
    out->first = first;
    out->slots = s->slots;
    out->base_us = s->base_us;
    out->keys = s->keys;
    out->far = s->far;
    out->n_far = s->n_far;
    out->n_addrs = s->n_addrs;
}

uint64_t od_trace_far_time(const od_device_trace *t, size_t store_index)
{
    size_t lo = 0, hi = t->n_far;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->far[mid * 2] < store_index)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < t->n_far && t->far[lo * 2] == store_index ? t->far[lo * 2 + 1] : 0;
}

size_t od_trace_store_bytes(const od_trace_store *s)
{
    if (!s)
        return 0;
    if (s->stream)
        return s->n_bytes + s->n_keys * (sizeof *s->keys + sizeof *s->next) + s->index_cap * sizeof *s->index +
               s->addr_ids.cap * sizeof(od_u64slot);
    return s->n * sizeof *s->slots + s->n_base * sizeof *s->base_us + s->n_keys * (sizeof *s->keys + sizeof *s->next) +
           s->index_cap * sizeof *s->index + s->n_far * 2 * sizeof *s->far + s->addr_ids.cap * sizeof(od_u64slot);
}

void od_trace_store_free(od_trace_store *s)
{
    if (!s)
        return;
    free(s->slots);
    free(s->base_us);
    free(s->keys);
    free(s->index);
    free(s->far);
    free(s->next);
    free(s->bytes);
    od_u64map_free(&s->addr_ids);
    free(s);
}
