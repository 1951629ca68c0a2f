/* mem.h - growable arrays shared by the readers. */
#ifndef OD_MEM_H
#define OD_MEM_H

#include <stddef.h>

/* Make *p hold at least need elements of elem bytes, doubling *cap (from 16) as it goes;
 * 0 when out of memory or the size would overflow (then *p and *cap are unchanged).
 * Arrays of several MiB ask the kernel for transparent huge pages where it offers them
 * on request: a million-entry trace then costs a few dozen page faults, not tens of
 * thousands. */
int od_grow(void **p, size_t *cap, size_t need, size_t elem);

#endif
