/* fuzz_trend.c - od_series_parse and od_trend_analyze on arbitrary bytes: never crash,
 * hang or produce a fit that is not a number. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "trend.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    od_series *s = NULL;
    od_error err;
    if (od_series_parse((const char *)data, size, &s, &err) != OD_OK)
        return 0;
    for (int m = 0; m < OD_METRIC_COUNT; m++) {
        od_trend_fit f;
        if (!s->y[m] || od_trend_analyze(s, (od_metric)m, 80ULL << 30, &f, &err) != OD_OK)
            continue;
        if (isnan(f.r2) || f.r2 < 0 || f.r2 > 1 || (unsigned)f.verdict > OD_TREND_SPIKE)
            abort();
    }
    od_series_free(s);
    return 0;
}
