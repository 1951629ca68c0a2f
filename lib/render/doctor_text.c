/* doctor_text.c - doctor's text from the diagnosis document. */
#include "render/doctor_text.h"

#include <stdlib.h>
#include <string.h>

#include "oomdoc/oomdoc.h"
#include "base/textsafe.h"
#include "render/doctor_doc.h"

static const char *str(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

/* Print fmt's one %s with s made safe for a terminal: paths shortened when shorten (to
 * their package, or relative to cwd), then escaped. */
static void put(FILE *f, const char *fmt, const char *s, int shorten, const char *cwd)
{
    size_t len = strlen(s);
    char *short_ = NULL, *esc = NULL;
    if (shorten) {
        size_t n = od_text_shorten_paths(s, len, cwd, NULL, 0);
        if ((short_ = malloc(n + 1))) {
            od_text_shorten_paths(s, len, cwd, short_, n + 1);
            s = short_;
            len = strlen(s);
        }
    }
    size_t n = od_text_escape(s, len, 0, NULL, 0);
    if ((esc = malloc(n + 1))) {
        od_text_escape(s, len, 0, esc, n + 1);
        s = esc;
    }
    fprintf(f, fmt, s);
    free(short_);
    free(esc);
}

static void print_remedy(FILE *f, const json_t *m, size_t i, const char *cwd)
{
    fprintf(f, "  %zu. ", i + 1);
    put(f, "%s\n", str(m, "action"), 1, cwd);
    if (*str(m, "effect"))
        put(f, "     -> %s\n", str(m, "effect"), 1, cwd);
    const json_t *c = json_object_get(m, "check");
    const char *method = str(c, "method"), *detail = str(c, "detail");
    if (*method && strcmp(method, "none") != 0) {
        fprintf(f, "     checked (%s): ", method);
        put(f, "%s\n", detail, 1, cwd);
    } else if (*detail) {
        put(f, "     %s\n", detail, 1, cwd);
    }
    if (*str(m, "command"))
        put(f, "     $ %s\n", str(m, "command"), 0, cwd);
}

typedef struct {
    FILE *f;
    const char *cwd;
} printer;

static void print_evidence_item(void *ctx, const char *input, int first, const char *shown, const char *text)
{
    printer *p = ctx;
    (void)text;
    if (input && first)
        put(p->f, "  %s\n", input, 0, p->cwd);
    put(p->f, input ? "    - %s\n" : "  - %s\n", shown, 1, p->cwd);
}

static void print_remedies(FILE *f, const od_text_style *s, const char *title, const json_t *arr)
{
    if (!json_array_size(arr))
        return;
    fprintf(f, "\n%s%s%s\n", s->bold, title, s->reset);
    size_t i;
    const json_t *m;
    json_array_foreach(arr, i, m)
        print_remedy(f, m, i, s->cwd);
}

od_status od_diagnosis_print(const json_t *doc, FILE *f, const od_text_style *style, od_error *err)
{
    static const od_text_style plain = {"", "", "", "", "", NULL};
    const od_text_style *s = style ? style : &plain;
    const char *verdict = json_string_value(json_object_get(doc, "verdict"));
    if (!verdict)
        return od_fail(err, OD_ERR_FORMAT, "not a diagnosis document (no verdict)");
    const char *col = !strcmp(verdict, "healthy") ? s->green : !strcmp(verdict, "unknown") ? s->yellow : s->red;
    fprintf(f, "%sverdict: %s%s%s\n", s->bold, col, verdict, s->reset);
    const char *headline = json_string_value(json_object_get(doc, "headline"));
    if (headline && *headline)
        put(f, "  %s\n", headline, 1, s->cwd);
    if (json_array_size(json_object_get(doc, "evidence"))) {
        fprintf(f, "\n%sevidence%s\n", s->bold, s->reset);
        printer p = {f, s->cwd};
        od_diagnosis_each_evidence(doc, print_evidence_item, &p);
    }
    print_remedies(f, s, "do now", json_object_get(doc, "do_now"));
    print_remedies(f, s, "long term", json_object_get(doc, "long_term"));
    fprintf(f, "\n%sverify%s\n", s->bold, s->reset);
    put(f, "  %s\n", str(doc, "verify"), 1, s->cwd);
    if (*str(doc, "verify_command"))
        put(f, "  $ %s\n", str(doc, "verify_command"), 0, s->cwd);
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
