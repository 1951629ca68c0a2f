/* u64map.c - linear probing with backward-shift deletion. */
#include "u64map.h"

#include <stdlib.h>

static size_t slot_of(uint64_t key, size_t cap)
{
    return (size_t)((key * 0x9e3779b97f4a7c15ull) >> 17) & (cap - 1);
}

int od_u64map_get(const od_u64map *m, uint64_t key, uint32_t *val)
{
    if (key == UINT64_MAX) {
        if (m->has_max)
            *val = m->max_val;
        return m->has_max;
    }
    if (!m->cap)
        return 0;
    size_t mask = m->cap - 1;
    for (size_t j = slot_of(key, m->cap); m->keys[j]; j = (j + 1) & mask) {
        if (m->keys[j] == key + 1) {
            *val = m->vals[j];
            return 1;
        }
    }
    return 0;
}

static int rehash(od_u64map *m)
{
    size_t nc = m->cap ? m->cap * 2 : 256;
    uint64_t *nk = calloc(nc, sizeof *nk);
    uint32_t *nv = malloc(nc * sizeof *nv);
    if (!nk || !nv) {
        free(nk);
        free(nv);
        return 0;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->keys[i])
            continue;
        size_t j = slot_of(m->keys[i] - 1, nc);
        while (nk[j])
            j = (j + 1) & (nc - 1);
        nk[j] = m->keys[i];
        nv[j] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    m->keys = nk;
    m->vals = nv;
    m->cap = nc;
    return 1;
}

int od_u64map_put(od_u64map *m, uint64_t key, uint32_t val)
{
    if (key == UINT64_MAX) {
        m->has_max = 1;
        m->max_val = val;
        return 1;
    }
    if ((m->n + 1) * 2 > m->cap && !rehash(m))
        return 0;
    size_t mask = m->cap - 1;
    size_t j = slot_of(key, m->cap);
    while (m->keys[j] && m->keys[j] != key + 1)
        j = (j + 1) & mask;
    if (!m->keys[j])
        m->n++;
    m->keys[j] = key + 1;
    m->vals[j] = val;
    return 1;
}

void od_u64map_del(od_u64map *m, uint64_t key)
{
    if (key == UINT64_MAX) {
        m->has_max = 0;
        return;
    }
    if (!m->cap)
        return;
    size_t mask = m->cap - 1;
    size_t j = slot_of(key, m->cap);
    while (m->keys[j] && m->keys[j] != key + 1)
        j = (j + 1) & mask;
    if (!m->keys[j])
        return;
    m->keys[j] = 0;
    m->n--;
    /* Shift later members of the probe run back so lookups never stop early. */
    for (size_t k = (j + 1) & mask; m->keys[k]; k = (k + 1) & mask) {
        size_t home = slot_of(m->keys[k] - 1, m->cap);
        int movable = (j <= k) ? (home <= j || home > k) : (home <= j && home > k);
        if (movable) {
            m->keys[j] = m->keys[k];
            m->vals[j] = m->vals[k];
            m->keys[k] = 0;
            j = k;
        }
    }
}

void od_u64map_free(od_u64map *m)
{
    free(m->keys);
    free(m->vals);
    m->keys = NULL;
    m->vals = NULL;
    m->cap = m->n = 0;
    m->has_max = 0;
}

int od_u64map_next(const od_u64map *m, size_t *cursor, uint64_t *key, uint32_t *val)
{
    /* Slots 0 .. cap-1, then the side slot of UINT64_MAX at cap. */
    while (*cursor < m->cap) {
        size_t j = (*cursor)++;
        if (m->keys[j]) {
            *key = m->keys[j] - 1;
            *val = m->vals[j];
            return 1;
        }
    }
    if (*cursor == m->cap) {
        (*cursor)++;
        if (m->has_max) {
            *key = UINT64_MAX;
            *val = m->max_val;
            return 1;
        }
    }
    return 0;
}
