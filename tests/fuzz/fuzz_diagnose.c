/* fuzz_diagnose.c - libFuzzer target for the snapshot diagnosis: whatever snapshot the
 * loader accepts, iterations, categories, the diagnosis and a diff against itself must end
 * in OD_OK or a clean error: never a crash, a sanitizer report or a hang. */
#include <stdint.h>
#include <stdlib.h>

#include "analyze/categorize.h"
#include "analyze/diagnose.h"
#include "analyze/snapdiff.h"
#include "model/iterations.h"
#include "oomdoc/snapshot.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    od_input *in;
    od_error err;
    od_snapshot *snap = NULL;
    if (od_input_open_memory(data, size, &in, &err) != OD_OK)
        abort();
    od_status st = od_snapshot_load(in, &snap, &err);
    od_input_close(in);
    if (st != OD_OK)
        return 0;
    for (size_t i = 0; i < snap->n_traces; i++) {
        od_iterations *it = NULL;
        od_trace *t = NULL;
        if (od_trace_build(snap, snap->traces[i].device, NULL, &t, &err) == OD_OK &&
            od_iterations_find(t, 0, &it, &err) == OD_OK && it->n_survivors && !it->survivors[0].site)
            abort();
        od_iterations_free(it);
        od_trace_free(t);
    }
    od_diag_input di = {"fuzz", OD_INPUT_SNAPSHOT, NULL, NULL, NULL, snap, NULL, NULL};
    od_diagnosis *d = NULL;
    if (od_diagnose(&di, 1, &d, &err) == OD_OK) {
        if (d->verdict >= OD_VERDICT_COUNT)
            abort();
        if (d->n_summaries == 1) {
            od_snapdiff *x = NULL;
            if (od_snapdiff_compute(d->summaries[0], d->summaries[0], &x, &err) == OD_OK)
                for (size_t i = 0; i < x->n_devices; i++)
                    for (size_t k = 0; k < x->devices[i].n_live; k++)
                        if (x->devices[i].live[k].change_bytes != 0)
                            abort(); /* a snapshot against itself changes nothing */
            od_snapdiff_free(x);
        }
    }
    od_diagnosis_free(d);
    od_snapshot_free(snap);
    return 0;
}
