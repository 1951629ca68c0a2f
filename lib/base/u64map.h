/* u64map.h - an open-addressing hash map from 64-bit keys to 32-bit values, for the
 * library's own indexes (addresses, identities). Every key is allowed, 0 and UINT64_MAX
 * included. od_u64map_free releases it; a zeroed od_u64map is a valid empty map. */
#ifndef OD_U64MAP_H
#define OD_U64MAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint64_t key;     /* key + 1; 0 marks an empty slot (UINT64_MAX lives in a side slot) */
    uint32_t val;
} od_u64slot;

typedef struct {
    od_u64slot *slots;
    size_t cap, n;
    int has_max;
    uint32_t max_val;
} od_u64map;

/* Insert or replace; 0 on allocation failure (map unchanged). */
int od_u64map_put(od_u64map *m, uint64_t key, uint32_t val);
/* The value slot of key, inserted (value 0) when absent: one probe for get-or-insert.
 * *found says whether it was there. NULL on allocation failure (map unchanged). The
 * pointer is valid until the map next changes. */
uint32_t *od_u64map_slot(od_u64map *m, uint64_t key, int *found);
/* Remove key if present. */
void od_u64map_del(od_u64map *m, uint64_t key);
void od_u64map_free(od_u64map *m);

/* The home slot of key (internal to the map; here for the inline lookup below). */
static inline size_t od_u64map_home(uint64_t key, size_t cap)
{
    return (size_t)((key * 0x9e3779b97f4a7c15ull) >> 17) & (cap - 1);
}

/* 1 and *val filled when key is present, else 0. Inline: replays and summaries look up
 * an address per trace entry. */
static inline int od_u64map_get(const od_u64map *m, uint64_t key, uint32_t *val)
{
    if (key == UINT64_MAX) {
        if (m->has_max)
            *val = m->max_val;
        return m->has_max;
    }
    if (!m->cap)
        return 0;
    size_t mask = m->cap - 1;
    for (size_t j = od_u64map_home(key, m->cap); m->slots[j].key; j = (j + 1) & mask) {
        if (m->slots[j].key == key + 1) {
            *val = m->slots[j].val;
            return 1;
        }
    }
    return 0;
}

#endif
