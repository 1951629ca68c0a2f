/* u64map.h - an open-addressing hash map from 64-bit keys to 32-bit values, for the
 * library's own indexes (addresses, identities). Every key is allowed, 0 and UINT64_MAX
 * included. od_u64map_free releases it; a zeroed od_u64map is a valid empty map. */
#ifndef OD_U64MAP_H
#define OD_U64MAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint64_t *keys;   /* key + 1; 0 marks an empty slot (UINT64_MAX lives in a side slot) */
    uint32_t *vals;
    size_t cap, n;
    int has_max;
    uint32_t max_val;
} od_u64map;

/* 1 and *val filled when key is present, else 0. */
int od_u64map_get(const od_u64map *m, uint64_t key, uint32_t *val);
/* Insert or replace; 0 on allocation failure (map unchanged). */
int od_u64map_put(od_u64map *m, uint64_t key, uint32_t val);
/* Remove key if present. */
void od_u64map_del(od_u64map *m, uint64_t key);
void od_u64map_free(od_u64map *m);

/* Iterate: start with *cursor = 0; each call fills *key and *val with the next entry
 * (in no particular order) and returns 1, or returns 0 when all were visited. The map
 * must not change while iterating. */
int od_u64map_next(const od_u64map *m, size_t *cursor, uint64_t *key, uint32_t *val);

#endif
