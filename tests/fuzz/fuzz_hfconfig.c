/* fuzz_hfconfig.c - config.json reader on arbitrary bytes; a parsed model is also run
 * through the estimator (training and inference) so absurd-but-accepted sizes are
 * exercised too. */
#include <stddef.h>
#include <stdint.h>

#include "model/estimate.h"
#include "read/hfconfig.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    od_model m;
    od_error err;
    if (od_hfconfig_parse((const char *)data, size, &m, &err) != OD_OK)
        return 0;
    od_workload w;
    od_estimate e;
    od_workload_defaults(&w);
    w.batch = 4;
    (void)od_estimate_compute(&m, &w, &e, &err);
    w.task = OD_TASK_INFER;
    w.kv_cache = OD_KV_DYNAMIC;
    (void)od_estimate_compute(&m, &w, &e, &err);
    return 0;
}
