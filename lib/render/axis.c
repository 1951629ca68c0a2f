/* axis.c - axis steps and labels, shared in meaning with report_util.js. */
#include "render/axis.h"

#include <math.h>
#include <stdio.h>

const char *od_tick_label(uint64_t v, char *buf, size_t size)
{
    static const char *const u[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    if (v == 0) {
        snprintf(buf, size, "0");
        return buf;
    }
    if (v <= OD_TICK_EXACT_MAX) {
        for (int i = 5; i >= 0; i--) {
            uint64_t unit = (uint64_t)1 << (10 * i);
            if (v < unit || (v * 100) % unit != 0)
                continue;
            int dec = (v % unit == 0) ? 0 : ((v * 10) % unit == 0) ? 1 : 2;
            snprintf(buf, size, "%.*f %s", dec, (double)v / (double)unit, u[i]);
            return buf;
        }
    }
    snprintf(buf, size, "%llu B", (unsigned long long)v);
    return buf;
}

uint64_t od_byte_step(uint64_t max, int ticks)
{
    uint64_t step = 1;
    if (ticks <= 0)
        return step;
    while (step < ((uint64_t)1 << 62) && max / step > (uint64_t)ticks)
        step *= 2;
    return step;
}

uint64_t od_round_up(uint64_t v, uint64_t step)
{
    if (v == 0)
        return step;
    uint64_t r = (v + step - 1) / step * step;
    return r < v ? v : r;
}

double od_nice_step(double span, int ticks)
{
    if (!(span > 0) || !isfinite(span) || ticks <= 0)
        return 1;
    double raw = span / ticks, p = pow(10, floor(log10(raw)));
    double m = raw / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}
