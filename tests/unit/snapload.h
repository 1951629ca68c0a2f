/* snapload.h - for unit tests (include after cmocka.h): load a snapshot file that must
 * load, asserting each step. The caller frees it with od_snapshot_free. */
#ifndef OD_TEST_SNAPLOAD_H
#define OD_TEST_SNAPLOAD_H

#include <stdio.h>

#include "oomdoc/snapshot.h"

static inline od_snapshot *load_snapshot(const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    od_input *in = NULL;
    od_snapshot *s = NULL;
    od_error err;
    assert_int_equal(od_input_open_file(f, &in, &err), OD_OK);
    assert_int_equal(od_snapshot_load(in, &s, &err), OD_OK);
    od_input_close(in);
    fclose(f);
    return s;
}

#endif
