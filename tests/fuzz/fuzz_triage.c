/* fuzz_triage.c - od_triage_parse on arbitrary bytes: never crash, never read out of
 * bounds; every report it returns must be classified consistently. */
#include <stdint.h>
#include <stdlib.h>

#include "advice.h"
#include "triage.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    od_triage *t = NULL;
    od_error err;
    if (od_triage_parse((const char *)data, size, &t, &err) != OD_OK)
        return 0;
    for (size_t i = 0; i < t->n_reports; i++) {
        od_oom_report *r = &t->reports[i];
        od_oom_verdict v = r->verdict;
        od_triage_classify(r);
        if (r->verdict != v)
            abort();
        od_advice h[8];
        size_t nh = od_advice_for_report(r, h, 8);
        if (nh > 8)
            abort();
        for (size_t k = 0; k < nh; k++)
            if (!od_advice_get(h[k])->action)
                abort();
    }
    od_triage_free(t);
    return 0;
}
