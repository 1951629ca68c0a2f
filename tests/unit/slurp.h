/* slurp.h - for unit tests (include after cmocka.h): a whole file read into memory,
 * NUL-terminated, asserting each step. The caller frees it. */
#ifndef OD_TEST_SLURP_H
#define OD_TEST_SLURP_H

#include <stdio.h>
#include <stdlib.h>

static inline char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    b[n] = 0;
    *len = (size_t)n;
    return b;
}

#endif
