/* test_axis.c - axis labels and steps (render/axis.h) against the table the page script's
 * test reads too (tests/data/report/axis_cases.json), and od_format_iec against its "iec"
 * rows: the static page and its script say the same thing for every value there. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <math.h>
#include <string.h>

#include "base/units.h"
#include "render/axis.h"

static json_t *cases(const char *key)
{
    static json_t *doc;
    json_error_t je;
    if (!doc)
        doc = json_load_file("tests/data/report/axis_cases.json", 0, &je);
    assert_non_null(doc);
    json_t *a = json_object_get(doc, key);
    assert_true(json_is_array(a) && json_array_size(a) > 0);
    return a;
}

static uint64_t u64_at(json_t *row, size_t i)
{
    return (uint64_t)json_integer_value(json_array_get(row, i));
}

static void tick_labels(void **state)
{
    (void)state;
    size_t i;
    json_t *row;
    char buf[32];
    json_array_foreach(cases("tick_label"), i, row)
        assert_string_equal(od_tick_label(u64_at(row, 0), buf, sizeof buf), json_string_value(json_array_get(row, 1)));
}

static void byte_steps(void **state)
{
    (void)state;
    size_t i;
    json_t *row;
    json_array_foreach(cases("byte_step"), i, row)
        assert_true(od_byte_step(u64_at(row, 0), (int)u64_at(row, 1)) == u64_at(row, 2));
    /* the largest input stops at 2^62 too: no endless doubling */
    assert_true(od_byte_step(UINT64_MAX, 1) == (uint64_t)1 << 62);
}

static void nice_steps(void **state)
{
    (void)state;
    size_t i;
    json_t *row;
    json_array_foreach(cases("nice_step"), i, row) {
        double want = json_number_value(json_array_get(row, 2));
        double got = od_nice_step(json_number_value(json_array_get(row, 0)), (int)u64_at(row, 1));
        assert_true(fabs(got - want) <= 1e-12 * want);
    }
    assert_true(od_nice_step(INFINITY, 8) == 1 && od_nice_step(NAN, 8) == 1);
}

static void iec_text(void **state)
{
    (void)state;
    size_t i;
    json_t *row;
    char buf[32];
    json_array_foreach(cases("iec"), i, row)
        assert_string_equal(od_format_iec(u64_at(row, 0), buf, sizeof buf), json_string_value(json_array_get(row, 1)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(tick_labels),
        cmocka_unit_test(byte_steps),
        cmocka_unit_test(nice_steps),
        cmocka_unit_test(iec_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
