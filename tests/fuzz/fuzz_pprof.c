/* fuzz_pprof.c - od_pprof_parse on arbitrary bytes: never crash or hang; every index a
 * parsed profile holds resolves safely through the accessors. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "read/pprof.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    od_pprof *p = NULL;
    od_error err;
    if (od_pprof_parse(data, size, &p, &err) != OD_OK) {
        if (p || (err.has_offset && err.offset > size))
            abort();
        return 0;
    }
    size_t total = 0;
    for (size_t i = 0; i < p->n_samples; i++) {
        const od_pprof_sample *s = &p->samples[i];
        for (size_t l = 0; l < s->n_labels; l++)
            total += strlen(od_pprof_string(p, s->labels[l].key)) + strlen(od_pprof_string(p, s->labels[l].str));
        for (size_t k = 0; k < s->n_locations; k++) {
            const od_pprof_location *loc = od_pprof_location_by_id(p, s->location_ids[k]);
            if (!loc)
                continue;
            for (size_t j = 0; j < loc->n_lines; j++) {
                const od_pprof_function *f = od_pprof_function_by_id(p, loc->lines[j].function_id);
                if (f)
                    total += strlen(od_pprof_string(p, f->name)) + strlen(od_pprof_string(p, f->filename));
            }
        }
    }
    for (size_t i = 0; i < p->n_sample_types; i++)
        total += strlen(od_pprof_string(p, p->sample_types[i].type));
    od_pprof_free(p);
    return total == (size_t)-1;
}
