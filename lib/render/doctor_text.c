/* doctor_text.c - doctor's text from the diagnosis document. */
#include "render/doctor_text.h"

#include <stdlib.h>
#include <string.h>

#include "oomdoc/oomdoc.h"
#include "render/doctor_doc.h"

static const char *str(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

static void print_remedy(FILE *f, const json_t *m, size_t i)
{
    fprintf(f, "  %zu. %s\n", i + 1, str(m, "action"));
    if (*str(m, "effect"))
        fprintf(f, "     -> %s\n", str(m, "effect"));
    const json_t *c = json_object_get(m, "check");
    const char *method = str(c, "method"), *detail = str(c, "detail");
    if (*method && strcmp(method, "none") != 0)
        fprintf(f, "     checked (%s): %s\n", method, detail);
    else if (*detail)
        fprintf(f, "     %s\n", detail);
    if (*str(m, "command"))
        fprintf(f, "     $ %s\n", str(m, "command"));
}

static void print_evidence_item(void *ctx, const char *input, int first, const char *shown, const char *text)
{
    FILE *f = ctx;
    (void)text;
    if (input && first)
        fprintf(f, "  %s\n", input);
    fprintf(f, input ? "    - %s\n" : "  - %s\n", shown);
}

static void print_remedies(FILE *f, const od_text_style *s, const char *title, const json_t *arr)
{
    if (!json_array_size(arr))
        return;
    fprintf(f, "\n%s%s%s\n", s->bold, title, s->reset);
    size_t i;
    const json_t *m;
    json_array_foreach(arr, i, m)
        print_remedy(f, m, i);
}

od_status od_diagnosis_print(const json_t *doc, FILE *f, const od_text_style *style, od_error *err)
{
    static const od_text_style plain = {"", "", "", "", ""};
    const od_text_style *s = style ? style : &plain;
    const char *verdict = json_string_value(json_object_get(doc, "verdict"));
    if (!verdict)
        return od_fail(err, OD_ERR_FORMAT, "not a diagnosis document (no verdict)");
    const char *col = !strcmp(verdict, "healthy") ? s->green : !strcmp(verdict, "unknown") ? s->yellow : s->red;
    fprintf(f, "%sverdict: %s%s%s\n", s->bold, col, verdict, s->reset);
    const char *headline = json_string_value(json_object_get(doc, "headline"));
    if (headline && *headline)
        fprintf(f, "  %s\n", headline);
    if (json_array_size(json_object_get(doc, "evidence"))) {
        fprintf(f, "\n%sevidence%s\n", s->bold, s->reset);
        od_diagnosis_each_evidence(doc, print_evidence_item, f);
    }
    print_remedies(f, s, "do now", json_object_get(doc, "do_now"));
    print_remedies(f, s, "long term", json_object_get(doc, "long_term"));
    fprintf(f, "\n%sverify%s\n  %s\n", s->bold, s->reset, str(doc, "verify"));
    if (*str(doc, "verify_command"))
        fprintf(f, "  $ %s\n", str(doc, "verify_command"));
    if (ferror(f))
        return od_fail(err, OD_ERR_IO, "writing failed");
    return OD_OK;
}

od_status od_diagnosis_text_json(const char *json, size_t len, char **text, od_error *err)
{
    *text = NULL;
    json_error_t je;
    json_t *doc = json_loadb(json, len, 0, &je);
    if (!doc)
        return od_fail_at(err, OD_ERR_FORMAT, (uint64_t)je.position, "not JSON: %s", je.text);
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    if (!f) {
        json_decref(doc);
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    }
    od_status st = od_diagnosis_print(doc, f, NULL, err);
    if (fclose(f) != 0 && st == OD_OK)
        st = od_fail(err, OD_ERR_NOMEM, "out of memory");
    json_decref(doc);
    if (st != OD_OK) {
        free(buf);
        return st;
    }
    *text = buf;
    return OD_OK;
}
