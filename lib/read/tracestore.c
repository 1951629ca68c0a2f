/* tracestore.c - trace entries as (key, time offset) pairs; see tracestore.h. */
#include "oomdoc/tracestore.h"

#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/u64map.h"

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

int od_trace_store_add(od_trace_store *s, const od_trace_entry *e)
{
    if (s->n == s->cap && (s->n >= UINT32_MAX || !od_grow((void **)&s->slots, &s->cap, s->n + 1, sizeof *s->slots)))
        return 0;
    size_t chunk = s->n >> OD_TRACE_CHUNK_BITS;
    if (chunk >= s->n_base) {
        if (!od_grow((void **)&s->base_us, &s->cap_base, chunk + 1, sizeof *s->base_us))
            return 0;
        s->base_us[chunk] = e->time_us;
        s->n_base = chunk + 1;
    }
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
    if (id != UINT32_MAX && !key_equal(&s->keys[id], &k)) {
        id = s->next[s->last][1];
        if (id != UINT32_MAX && !key_equal(&s->keys[id], &k))
            id = UINT32_MAX;
    }
    if (id == UINT32_MAX) {
        id = intern(s, &k);
        if (id == UINT32_MAX)
            return 0;
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
    if (s->last != UINT32_MAX && s->next[s->last][0] != id) {
        s->next[s->last][1] = s->next[s->last][0];
        s->next[s->last][0] = id;
    }
    s->last = id;
    return 1;
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
    od_u64map_free(&s->addr_ids);
    free(s);
}
