/* test_doctor_doc.c - the diagnosis document and the text printed from it: the public
 * od_diagnosis_text_json (what the Python package calls with doctor's --json output) gives
 * the text doctor prints, for a real run that died with CUDA OOM (its snapshot and message);
 * and a document without a verdict is refused with the offset of bad JSON. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oomdoc/oomdoc.h"
#include "render/doctor_doc.h"
#include "render/doctor_text.h"

static void load(const char *path, od_loaded *l)
{
    FILE *f = fopen(path, "rb");
    od_input *in = NULL;
    od_error err;
    assert_non_null(f);
    assert_int_equal(od_input_open_file(f, &in, &err), OD_OK);
    memset(l, 0, sizeof *l);
    l->name = path;
    assert_int_equal(od_load(in, NULL, l, &err), OD_OK);
    od_input_close(in);
    fclose(f);
}

static void text_from_the_document(void **state)
{
    (void)state;
    od_loaded ins[2];
    load("examples/snap_train_oom.pickle", &ins[0]);
    load("examples/snap_train_oom.log", &ins[1]);
    od_diagnosis *d = NULL;
    size_t bad;
    od_error err;
    assert_int_equal(od_diagnose_loaded(ins, 2, NULL, &d, &bad, &err), OD_OK);
    json_t *doc = od_diagnosis_document(d, ins, 2);
    assert_non_null(doc);
    char *json = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    char *direct = NULL, *via = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&direct, &n);
    assert_int_equal(od_diagnosis_print(doc, f, NULL, &err), OD_OK);
    fclose(f);
    assert_int_equal(od_diagnosis_text_json(json, strlen(json), &via, &err), OD_OK);
    assert_string_equal(via, direct);
    assert_non_null(strstr(via, "verdict: cap_limit\n"));
    assert_non_null(strstr(via, "\ndo now\n  1. "));
    free(direct);
    free(via);
    free(json);
    json_decref(doc);
    od_diagnosis_free(d);
    od_loaded_free(&ins[0]);
    od_loaded_free(&ins[1]);
}

static void refuses_what_is_no_document(void **state)
{
    (void)state;
    char *text = NULL;
    od_error err;
    assert_int_equal(od_diagnosis_text_json("{\"a\": 1}", 8, &text, &err), OD_ERR_FORMAT);
    assert_null(text);
    assert_int_equal(od_diagnosis_text_json("{\"verdict\": ", 12, &text, &err), OD_ERR_FORMAT);
    assert_true(err.has_offset);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(text_from_the_document),
        cmocka_unit_test(refuses_what_is_no_document),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
