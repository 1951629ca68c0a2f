/* mem.h - growable arrays shared by the readers, and sorting them. */
#ifndef OD_MEM_H
#define OD_MEM_H

#include <stddef.h>

/* Make *p hold at least need elements of elem bytes, doubling *cap (from 16) as it goes;
 * 0 when out of memory or the size would overflow (then *p and *cap are unchanged).
 * Arrays of several MiB ask the kernel for transparent huge pages where it offers them
 * on request: a million-entry trace then costs a few dozen page faults, not tens of
 * thousands. */
int od_grow(void **p, size_t *cap, size_t need, size_t elem);

/* qsort for arrays that may be empty: an empty one may be NULL, which qsort's contract
 * forbids (clang's sanitizer stops there), and one element needs no sorting. */
void od_sort(void *base, size_t n, size_t elem, int (*cmp)(const void *, const void *));

#endif
