/* fuzz_profile.c - od_profile_load on arbitrary bytes (every format it detects: Chrome
 * trace, memory timeline, key_averages table, pprof, memory_stats, BFC log; gzip or not):
 * never crash or hang, and a loaded profile keeps its invariants. */
#include <stdint.h>
#include <stdlib.h>

#include "read/profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    od_input *in = NULL;
    od_error err;
    od_profile *p = NULL;
    if (od_input_open_memory(data, size, &in, &err) != OD_OK)
        return 0;
    od_status st = od_profile_load(in, &p, &err);
    od_input_close(in);
    if (st != OD_OK) {
        if (p || !err.msg[0])
            abort();
        return 0;
    }
    if ((unsigned)p->kind >= OD_PROFILE_KIND_COUNT)
        abort();
    if (p->n_points) {
        if (p->peak_index >= p->n_points || p->allocated_bytes[p->peak_index] != p->peak_allocated_bytes)
            abort();
        for (size_t i = 0; i < p->n_points; i++)
            if (p->allocated_bytes[i] > p->peak_allocated_bytes)
                abort();
    }
    if (p->kind == OD_PROFILE_TORCH_TIMELINE && p->n_points) {
        uint64_t s = 0;
        for (int c = 0; c < OD_PCAT_COUNT; c++)
            s += p->peak_category_bytes[c];
        if (s != p->peak_allocated_bytes)
            abort();
    }
    for (size_t i = 0; i < p->n_spans; i++)
        if (p->spans[i].end_us < p->spans[i].start_us || (unsigned)p->spans[i].phase >= OD_PHASE_COUNT)
            abort();
    od_profile_free(p);
    return 0;
}
