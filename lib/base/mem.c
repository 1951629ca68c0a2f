/* mem.c - growable arrays shared by the readers. */
#include "base/mem.h"

#include <stdint.h>
#include <stdlib.h>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#define HUGE_HINT_BYTES ((size_t)4 << 20)

/* Ask for huge pages over the pages [p, p + bytes) touches; only a hint. A block this big
 * is a mapping of its own in glibc, so the range is that mapping and does not split it
 * (a split would stop realloc from moving it with mremap). */
static void hint_huge(void *p, size_t bytes)
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    uintptr_t lo = (uintptr_t)p & ~(uintptr_t)4095;
    uintptr_t hi = ((uintptr_t)p + bytes + 4095) & ~(uintptr_t)4095;
    if (hi > lo)
        (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
#else
    (void)p;
    (void)bytes;
#endif
}

int od_grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 1;
    size_t nc = *cap ? *cap : 16;
    while (nc < need) {
        if (nc > SIZE_MAX / 2 / elem)
            return 0;
        nc *= 2;
    }
    void *np = realloc(*p, nc * elem);
    if (!np)
        return 0;
    if (nc * elem >= HUGE_HINT_BYTES)
        hint_huge(np, nc * elem);
    *p = np;
    *cap = nc;
    return 1;
}

void od_sort(void *base, size_t n, size_t elem, int (*cmp)(const void *, const void *))
{
    if (n > 1)
        qsort(base, n, elem, cmp);
}
