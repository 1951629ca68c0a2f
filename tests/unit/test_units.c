/* test_units.c - byte-size formatting and parsing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "base/units.h"

static void parses_iec_and_si(void **state)
{
    (void)state;
    uint64_t v;
    assert_int_equal(od_parse_size("2GiB", &v, NULL), OD_OK);
    assert_true(v == 2ull << 30);
    assert_int_equal(od_parse_size("40GB", &v, NULL), OD_OK);
    assert_true(v == 40000000000ull);
    assert_int_equal(od_parse_size("1.5 MiB", &v, NULL), OD_OK);
    assert_true(v == 1572864ull);
    assert_int_equal(od_parse_size("150109880320", &v, NULL), OD_OK);
    assert_true(v == 150109880320ull);
    assert_int_equal(od_parse_size("18446744073709551615", &v, NULL), OD_OK);
    assert_true(v == UINT64_MAX);
}

static void rejects_garbage(void **state)
{
    (void)state;
    uint64_t v;
    od_error err;
    assert_int_equal(od_parse_size("-1GiB", &v, &err), OD_ERR_ARG);
    assert_int_equal(od_parse_size("12 parsecs", &v, &err), OD_ERR_ARG);
    assert_non_null(strstr(err.msg, "parsecs"));
    assert_int_equal(od_parse_size("", &v, &err), OD_ERR_ARG);
    assert_int_equal(od_parse_size("1e30GiB", &v, &err), OD_ERR_ARG);
}

static void formats_iec(void **state)
{
    (void)state;
    char buf[32];
    assert_string_equal(od_format_iec(512, buf, sizeof buf), "512 B");
    assert_string_equal(od_format_iec(1536, buf, sizeof buf), "1.50 KiB");
    assert_string_equal(od_format_iec(2ull << 30, buf, sizeof buf), "2.00 GiB");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parses_iec_and_si),
        cmocka_unit_test(rejects_garbage),
        cmocka_unit_test(formats_iec),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
