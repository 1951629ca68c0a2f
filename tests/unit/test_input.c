/* test_input.c - od_input_finish: a reader that stops at its format's end still has the
 * gzip trailer checked (CRC-32, ISIZE), on memory and on a file (the background reader). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "oomdoc/input.h"

/* data gzipped (a real gzip member: zlib's deflate with the gzip wrapper). */
static unsigned char *gz(const unsigned char *data, size_t n, size_t *out_n)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    assert_int_equal(deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
    size_t cap = deflateBound(&z, (uLong)n) + 64;
    unsigned char *out = malloc(cap);
    z.next_in = (unsigned char *)data;
    z.avail_in = (uInt)n;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
    *out_n = cap - z.avail_out;
    deflateEnd(&z);
    return out;
}

static unsigned char *text(size_t n)
{
    unsigned char *d = malloc(n);
    for (size_t i = 0; i < n; i++)
        d[i] = (unsigned char)("pickle-like bytes "[i % 18]);
    return d;
}

/* Read the first `take` bytes, as a reader that stops at its own end, then finish. */
static od_status read_then_finish(od_input *in, size_t take, od_error *err)
{
    unsigned char buf[256];
    while (take) {
        size_t k = od_input_read(in, buf, take < sizeof buf ? take : sizeof buf);
        if (!k)
            break;
        take -= k;
    }
    return od_input_finish(in, err);
}

static od_status finish_memory(const unsigned char *g, size_t n, size_t take, od_error *err)
{
    od_input *in;
    assert_int_equal(od_input_open_memory(g, n, &in, err), OD_OK);
    od_status st = read_then_finish(in, take, err);
    od_input_close(in);
    return st;
}

static void good_trailer_passes(void **state)
{
    (void)state;
    size_t n = 5000, gn;
    unsigned char *d = text(n), *g = gz(d, n, &gn);
    od_error err;
    assert_int_equal(finish_memory(g, gn, 100, &err), OD_OK);
    assert_int_equal(finish_memory(g, gn, n, &err), OD_OK);
    free(g);
    free(d);
}

static void bad_crc_and_isize_fail(void **state)
{
    (void)state;
    size_t n = 5000, gn;
    unsigned char *d = text(n), *g = gz(d, n, &gn);
    od_error err;
    g[gn - 8] ^= 0xff; /* CRC-32, low byte */
    /* A reader that stopped early: the trailer is reached by finish. */
    assert_int_equal(finish_memory(g, gn, 100, &err), OD_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "CRC-32"));
    assert_true(err.has_offset);
    g[gn - 8] ^= 0xff;
    g[gn - 4] ^= 0x01; /* ISIZE */
    assert_int_equal(finish_memory(g, gn, n, &err), OD_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "ISIZE"));
    free(g);
    free(d);
}

static void file_input_through_the_background_reader(void **state)
{
    (void)state;
    size_t n = 3u << 20, gn; /* several of the reader's 1 MiB slots */
    unsigned char *d = text(n), *g = gz(d, n, &gn);
    g[gn - 7] ^= 0x10;
    FILE *f = tmpfile();
    assert_non_null(f);
    assert_int_equal(fwrite(g, 1, gn, f), gn);
    rewind(f);
    od_input *in;
    od_error err;
    assert_int_equal(od_input_open_file(f, &in, &err), OD_OK);
    assert_int_equal(read_then_finish(in, 1000, &err), OD_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "CRC-32"));
    od_input_close(in);
    fclose(f);
    free(g);
    free(d);
}

static void plain_input_is_not_read(void **state)
{
    (void)state;
    const char *s = "plain text, not gzip";
    od_input *in;
    od_error err;
    assert_int_equal(od_input_open_memory(s, strlen(s), &in, &err), OD_OK);
    char b[5];
    assert_int_equal(od_input_read(in, b, 5), 5);
    assert_int_equal(od_input_finish(in, &err), OD_OK);
    assert_int_equal(od_input_read(in, b, 5), 5); /* finish left the rest */
    assert_memory_equal(b, " text", 5);
    od_input_close(in);
}

static void resumed_input_finishes_its_source(void **state)
{
    (void)state;
    size_t n = 4000, gn;
    unsigned char *d = text(n), *g = gz(d, n, &gn);
    g[gn - 8] ^= 0xff;
    od_input *rest, *in;
    od_error err;
    assert_int_equal(od_input_open_memory(g, gn, &rest, &err), OD_OK);
    unsigned char head[16];
    assert_int_equal(od_input_read(rest, head, sizeof head), sizeof head);
    assert_int_equal(od_input_open_resumed(head, sizeof head, NULL, 0, rest, &in, &err), OD_OK);
    assert_int_equal(od_input_finish(in, &err), OD_ERR_FORMAT);
    od_input_close(in);
    od_input_close(rest);
    free(g);
    free(d);
}

static void too_much_after_the_end_is_refused(void **state)
{
    (void)state;
    size_t n = (64u << 20) + (1u << 20), gn;
    unsigned char *d = calloc(1, n), *g = gz(d, n, &gn);
    od_error err;
    assert_int_equal(finish_memory(g, gn, 10, &err), OD_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "64 MiB"));
    free(g);
    free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(good_trailer_passes),
        cmocka_unit_test(bad_crc_and_isize_fail),
        cmocka_unit_test(file_input_through_the_background_reader),
        cmocka_unit_test(plain_input_is_not_read),
        cmocka_unit_test(resumed_input_finishes_its_source),
        cmocka_unit_test(too_much_after_the_end_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
