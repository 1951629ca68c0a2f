/* test_snapdiff.c - two allocator settings compared on the same job: the peaks diff shows
 * are the run's own. Expected values are the fixtures' memory_stats(), recorded by torch on
 * the H200 (tests/data/snapshots/snap_train_{default,expandable}.json: allocated_bytes.all.peak,
 * reserved_bytes.all.peak, requested_bytes.all.peak), not figures oomdoc computed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "analyze/snapdiff.h"
#include "snapload.h"

static void peaks_are_max_memory_allocated_and_reserved(void **state)
{
    (void)state;
    od_snapshot *a = load_snapshot("tests/data/snapshots/snap_train_default.pickle");
    od_snapshot *b = load_snapshot("tests/data/snapshots/snap_train_expandable.pickle");
    od_summary *sa = NULL, *sb = NULL;
    od_snapdiff *d = NULL;
    od_error err;
    assert_int_equal(od_summarize(a, &sa, &err), OD_OK);
    assert_int_equal(od_summarize(b, &sb, &err), OD_OK);
    assert_int_equal(od_snapdiff_compute(sa, sb, &d, &err), OD_OK);
    od_snapdiff_settings(d, a, b);
    assert_int_equal(d->n_devices, 1);
    const od_device_change *c = &d->devices[0];
    assert_true(c->have_peak[0] && c->have_peak[1]);
    assert_true(c->peak_allocated[0] == 5371063296ull); /* allocated_bytes.all.peak */
    assert_true(c->peak_allocated[1] == 5358647296ull);
    assert_true(c->have_reserved[0] && c->have_reserved[1]);
    assert_true(c->peak_reserved[0] == 6006243328ull); /* reserved_bytes.all.peak */
    assert_true(c->peak_reserved[1] == 5876219904ull);
    assert_true(c->peak[0] == 5358639724ull); /* requested_bytes.all.peak, both runs */
    assert_true(c->peak[1] == 5358639724ull);
    /* The settings: PYTORCH_CUDA_ALLOC_CONF of each run (the json's alloc_conf). */
    assert_true(d->settings_recorded[0] && d->settings_recorded[1]);
    assert_string_equal(d->settings[0], "");
    assert_string_equal(d->settings[1], "expandable_segments:True");
    assert_true(d->settings_differ);
    od_snapdiff_free(d);

    /* The same run against itself: nothing differs. */
    assert_int_equal(od_snapdiff_compute(sa, sa, &d, &err), OD_OK);
    od_snapdiff_settings(d, a, a);
    assert_false(d->settings_differ);
    assert_true(d->devices[0].peak_reserved[0] == d->devices[0].peak_reserved[1]);
    od_snapdiff_free(d);
    od_summary_free(sa);
    od_summary_free(sb);
    od_snapshot_free(a);
    od_snapshot_free(b);
}

/* torch 1.13's layout records no settings and no trace: nothing is claimed. */
static void nothing_recorded_nothing_claimed(void **state)
{
    (void)state;
    od_snapshot *a = load_snapshot("tests/data/extra/torch113_layout.pickle");
    od_summary *sa = NULL;
    od_snapdiff *d = NULL;
    od_error err;
    assert_int_equal(od_summarize(a, &sa, &err), OD_OK);
    assert_int_equal(od_snapdiff_compute(sa, sa, &d, &err), OD_OK);
    od_snapdiff_settings(d, a, a);
    assert_false(d->settings_recorded[0]);
    assert_false(d->settings_differ);
    for (size_t i = 0; i < d->n_devices; i++) {
        assert_false(d->devices[i].have_peak[0]);
        assert_false(d->devices[i].have_reserved[0]);
    }
    od_snapdiff_free(d);
    od_summary_free(sa);
    od_snapshot_free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(peaks_are_max_memory_allocated_and_reserved),
        cmocka_unit_test(nothing_recorded_nothing_claimed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
