/* fuzz_trend.c - od_series_parse and od_trend_analyze on arbitrary bytes: never crash,
 * hang or produce a fit that is not a number; and the parser fed in chunks of a size the
 * input picks gives what it gives fed whole (the same series, or the same error). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "read/trend.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_chunks(const uint8_t *data, size_t size, od_status whole_st, const od_error *whole_err,
                         const od_series *whole)
{
    size_t chunk = size ? 1 + data[size - 1] % 32 : 1;
    od_series_parser *p = NULL;
    od_series *s = NULL;
    od_error err;
    memset(&err, 0, sizeof err);
    if (od_series_parser_new(&p, &err) != OD_OK)
        abort();
    od_status st = OD_OK;
    for (size_t i = 0; i < size && st == OD_OK; i += chunk)
        st = od_series_feed(p, data + i, size - i < chunk ? size - i : chunk, &err);
    if (st == OD_OK)
        st = od_series_finish(p, &s, &err);
    od_series_parser_free(p);
    if (st != whole_st)
        abort();
    if (st != OD_OK) {
        if (err.has_offset != whole_err->has_offset || err.offset != whole_err->offset ||
            strcmp(err.msg, whole_err->msg) != 0)
            abort();
        return;
    }
    if (s->n != whole->n || s->time_indexed != whole->time_indexed ||
        (s->n && memcmp(s->x, whole->x, s->n * sizeof *s->x) != 0))
        abort();
    for (int m = 0; m < OD_METRIC_COUNT; m++)
        if (!s->y[m] != !whole->y[m] || (s->y[m] && s->n && memcmp(s->y[m], whole->y[m], s->n * sizeof(double)) != 0))
            abort();
    od_series_free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    od_series *s = NULL;
    od_error err;
    memset(&err, 0, sizeof err);
    od_status st = od_series_parse((const char *)data, size, &s, &err);
    check_chunks(data, size, st, &err, s);
    if (st != OD_OK)
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
