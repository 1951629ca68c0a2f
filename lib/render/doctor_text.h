/* doctor_text.h - doctor's text, printed from the diagnosis document (doctor_doc.h) and
 * nothing else, so the text says what --json, the report page and the Python package say:
 * the verdict, the evidence grouped by input (each input's name once above its items),
 * what to do now and in the long term with each item's check and command, and how to
 * verify the fix. */
#ifndef OD_DOCTOR_TEXT_H
#define OD_DOCTOR_TEXT_H

#include <jansson.h>
#include <stdio.h>

#include "oomdoc/od.h"

/* Escape sequences for emphasis, or "" each (no colour); and the working directory paths
 * are shown relative to (NULL or "": none). Whatever the document holds is escaped for a
 * terminal (base/textsafe.h: frame strings come from the snapshot, untrusted), and paths
 * in the evidence and remedies shortened to their package or to cwd; the commands are
 * printed whole, only escaped, so they run as printed. */
typedef struct {
    const char *bold, *red, *green, *yellow, *reset;
    const char *cwd;
} od_text_style;

/* Print doc (od_diagnosis_document's) to f. Fails with OD_ERR_FORMAT on a document
 * without a verdict, OD_ERR_IO when writing fails. */
od_status od_diagnosis_print(const json_t *doc, FILE *f, const od_text_style *style, od_error *err);

#endif
