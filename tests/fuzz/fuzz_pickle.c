/* fuzz_pickle.c - libFuzzer target for the pickle reader, the snapshot loader and the
 * summary built on it. Any input must end in OD_OK or a clean error: never a crash, a
 * sanitizer report, a hang or unbounded memory. */
#include <stdint.h>
#include <stdlib.h>

#include "analyze/summary.h"
#include "oomdoc/snapshot.h"
#include "read/pickle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    od_input *in;
    od_error err;
    if (od_input_open_memory(data, size, &in, &err) != OD_OK)
        abort();
    od_ptree *t = NULL;
    od_pickle_options opt = {0};
    opt.max_string_bytes = 1 << 20;
    if (od_pickle_load(in, &opt, &t, &err) == OD_OK) {
        /* Walk the tree's top level through the accessors. */
        od_pv root = od_ptree_root(t);
        size_t n = od_pv_len(t, root);
        for (size_t i = 0; i < n && i < 64; i++) {
            od_pv v = od_pv_typeof(t, root) == OD_PV_DICT ? od_pv_dict_value(t, root, i) : od_pv_item(t, root, i);
            int64_t x;
            double d;
            (void)od_pv_get_i64(t, v, &x);
            (void)od_pv_get_f64(t, v, &d);
            (void)od_pv_str(t, v, NULL);
        }
        od_ptree_free(t);
    } else if (!err.has_offset && err.status != OD_ERR_NOMEM) {
        abort(); /* every parse error names its byte offset */
    }
    od_input_close(in);

    if (od_input_open_memory(data, size, &in, &err) != OD_OK)
        abort();
    od_snapshot *s = NULL;
    if (od_snapshot_load(in, &s, &err) == OD_OK) {
        od_summary *sum = NULL;
        if (od_summarize(s, &sum, &err) == OD_OK)
            od_summary_free(sum);
        od_snapshot_free(s);
    }
    od_input_close(in);
    return 0;
}
