/* trend_doc.h - `oomdoc trend --json`'s document: the fit of the primary metric (verdict,
 * growth per step or second, r2, warm-up, the window, the projection), the other metrics'
 * fits, and for a snapshot its iterations and whether their growth is bounded (released
 * before the trace ends). schema_version 1, bytes in JSON. Returns a new reference (the
 * caller json_decrefs it), NULL when out of memory; nothing is kept. */
#ifndef OD_TREND_DOC_H
#define OD_TREND_DOC_H

#include <jansson.h>

#include "model/iterations.h"
#include "read/trend.h"

/* name: the input as shown; its: NULL but for a snapshot; others[m] counts where
 * have_other[m]; bounded: od_iterations_verdict's. */
json_t *od_trend_document(const char *name, const od_series *s, const od_iterations *its, const od_trend_fit *fit,
                          const od_trend_fit *others, const int *have_other, uint64_t capacity, int bounded);

#endif
