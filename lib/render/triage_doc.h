/* triage_doc.h - the `oomdoc triage --json` document (schema_version 1, sizes in bytes), and
 * one OOM report as the JSON object triage and doctor print. Each returns a new jansson
 * reference the caller owns (json_decref); NULL only when out of memory. */
#ifndef OD_TRIAGE_DOC_H
#define OD_TRIAGE_DOC_H

#include <jansson.h>

#include "read/triage/triage.h"

/* The whole result t of reading input (its name as the document names it, e.g. "-"). */
json_t *od_triage_document(const od_triage *t, const char *input);

/* One report: framework, wording, figures, the verdict with its reason and meaning, the torch
 * releases its wording dates, the hints. */
json_t *od_triage_report_json(const od_oom_report *r);

/* The verdict's reason in one sentence with its numbers (IEC units) into buf[0..size). */
void od_triage_report_reason(const od_oom_report *r, char *buf, size_t size);

#endif
