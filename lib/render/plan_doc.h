/* plan_doc.h - the `oomdoc plan --json` documents (schema_version 1, sizes in bytes): one
 * plan, one vLLM serving plan, or a table with a row per combination of the comma-listed
 * flags. Each returns a new jansson object the caller frees with json_decref, or NULL when
 * out of memory. */
#ifndef OD_PLAN_DOC_H
#define OD_PLAN_DOC_H

#include <jansson.h>

#include "model/plan.h"
#include "read/safetensors.h"

/* A training or generate() plan. ck: the checkpoint's safetensors totals when --model
 * read them (NULL: a config alone); config_params: the config's own count beside them. */
json_t *od_plan_document(const od_model *m, const od_workload *w, const od_gpu *gpu,
                         const od_plan *p, const od_safetensors_totals *ck, uint64_t config_params);

/* A vLLM serving plan. */
json_t *od_vllm_document(const od_model *m, const od_workload *w, const od_gpu *gpu,
                         const od_vllm_config *c, const od_vllm_plan *v);

#define OD_PLAN_MAX_AXES 6

/* One row of a table: the values of the listed flags, and its plan (vllm set: a vLLM row). */
typedef struct {
    const char *value[OD_PLAN_MAX_AXES];
    od_workload workload;
    od_gpu gpu;
    const od_plan *plan;
    const od_vllm_plan *vllm;
} od_plan_row;

/* A table: axes names the listed flags ("weights", "gpu", ...), a row per combination. */
json_t *od_plan_table_document(const od_model *m, const char *const *axes, size_t n_axes,
                               const od_plan_row *rows, size_t n_rows);

/* What a model is, for the documents (model_type, sizes, experts). */
json_t *od_plan_model_json(const od_model *m);

#endif
