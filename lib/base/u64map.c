/* u64map.c - linear probing with backward-shift deletion. */
#include "base/u64map.h"

#include <stdlib.h>

static int rehash(od_u64map *m)
{
    size_t nc = m->cap ? m->cap * 2 : 256;
    od_u64slot *ns = calloc(nc, sizeof *ns);
    if (!ns)
        return 0;
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->slots[i].key)
            continue;
        size_t j = od_u64map_home(m->slots[i].key - 1, nc);
        while (ns[j].key)
            j = (j + 1) & (nc - 1);
        ns[j] = m->slots[i];
    }
    free(m->slots);
    m->slots = ns;
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
    size_t j = od_u64map_home(key, m->cap);
    while (m->slots[j].key && m->slots[j].key != key + 1)
        j = (j + 1) & mask;
    if (!m->slots[j].key)
        m->n++;
    m->slots[j].key = key + 1;
    m->slots[j].val = val;
    return 1;
}

uint32_t *od_u64map_slot(od_u64map *m, uint64_t key, int *found)
{
    if (key == UINT64_MAX) {
        *found = m->has_max;
        m->has_max = 1;
        return &m->max_val;
    }
    if ((m->n + 1) * 2 > m->cap && !rehash(m))
        return NULL;
    size_t mask = m->cap - 1;
    size_t j = od_u64map_home(key, m->cap);
    while (m->slots[j].key && m->slots[j].key != key + 1)
        j = (j + 1) & mask;
    *found = m->slots[j].key != 0;
    if (!*found) {
        m->n++;
        m->slots[j].key = key + 1;
        m->slots[j].val = 0;
    }
    return &m->slots[j].val;
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
    size_t j = od_u64map_home(key, m->cap);
    while (m->slots[j].key && m->slots[j].key != key + 1)
        j = (j + 1) & mask;
    if (!m->slots[j].key)
        return;
    m->slots[j].key = 0;
    m->n--;
    /* Shift later members of the probe run back so lookups never stop early. */
    for (size_t k = (j + 1) & mask; m->slots[k].key; k = (k + 1) & mask) {
        size_t home = od_u64map_home(m->slots[k].key - 1, m->cap);
        int movable = (j <= k) ? (home <= j || home > k) : (home <= j && home > k);
        if (movable) {
            m->slots[j] = m->slots[k];
            m->slots[k].key = 0;
            j = k;
        }
    }
}

void od_u64map_free(od_u64map *m)
{
    free(m->slots);
    m->slots = NULL;
    m->cap = m->n = 0;
    m->has_max = 0;
}
