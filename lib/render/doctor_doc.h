/* doctor_doc.h - the diagnosis as one JSON document: what `oomdoc doctor --json` prints,
 * what `oomdoc report` embeds verbatim (and renders its diagnosis sections from), what
 * doctor's text is printed from (doctor_text.h) and what the Python package reads. One
 * document, so every view says the same thing. schema_version 1; sizes in bytes.
 *
 * Both builders return a new reference the caller releases with json_decref, or NULL when
 * out of memory. Nothing they are given is kept. */
#ifndef OD_DOCTOR_DOC_H
#define OD_DOCTOR_DOC_H

#include <jansson.h>

#include "analyze/diagnose.h"
#include "read/load.h"

/* The document of diagnosis d of inputs ins[0..n) (those it was made from). */
json_t *od_diagnosis_document(const od_diagnosis *d, const od_loaded *ins, size_t n);


/* Walk a diagnosis document's evidence grouped by input, as every view shows it: the
 * inputs in their order, each one's items with its name stripped from their text (the
 * name is shown once, above them), then what spans several inputs. fn(ctx, input, first,
 * shown, text): input the input's name (NULL for the last group), first 1 for a group's
 * first item, shown the text to show, text the whole sentence. */
typedef void (*od_evidence_fn)(void *ctx, const char *input, int first, const char *shown, const char *text);
void od_diagnosis_each_evidence(const json_t *doc, od_evidence_fn fn, void *ctx);

#endif
