/* units.c - formatting and parsing byte sizes. */
#include "base/units.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

char *od_format_iec(uint64_t bytes, char *buf, size_t bufsize)
{
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (bytes < 1024) {
        snprintf(buf, bufsize, "%llu B", (unsigned long long)bytes);
        return buf;
    }
    double v = (double)bytes;
    int u = -1;
    while (v >= 1024.0 && u < 5) {
        v /= 1024.0;
        u++;
    }
    snprintf(buf, bufsize, "%.2f %s", v, units[u]);
    return buf;
}

od_status od_parse_size(const char *text, uint64_t *out_bytes, od_error *err)
{
    static const struct { const char *name; double mult; } suffixes[] = {
        {"", 1.0}, {"b", 1.0},
        {"k", 1024.0}, {"kib", 1024.0}, {"m", 1048576.0}, {"mib", 1048576.0},
        {"g", 1073741824.0}, {"gib", 1073741824.0}, {"t", 1099511627776.0},
        {"tib", 1099511627776.0},
        {"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12},
    };
    if (!text)
        return od_fail(err, OD_ERR_ARG, "missing size");
    const char *p = text;
    while (isspace((unsigned char)*p))
        p++;
    if (!isdigit((unsigned char)*p) && *p != '.')
        return od_fail(err, OD_ERR_ARG, "'%s' is not a size (expected e.g. 2GiB, 40GB, 1048576)", text);
    char *end;
    double v = strtod(p, &end);
    if (end == p || !isfinite(v) || v < 0)
        return od_fail(err, OD_ERR_ARG, "'%s' is not a size (expected e.g. 2GiB, 40GB, 1048576)", text);
    while (isspace((unsigned char)*end))
        end++;
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        if (strcasecmp(end, suffixes[i].name) == 0) {
            /* Plain integers stay exact, beyond double precision too. */
            size_t digits = strspn(p, "0123456789");
            if (suffixes[i].mult == 1.0 && (p[digits] == '\0' || isspace((unsigned char)p[digits]) ||
                                            p[digits] == 'b' || p[digits] == 'B')) {
                errno = 0;
                unsigned long long u = strtoull(p, NULL, 10);
                if (errno == ERANGE)
                    return od_fail(err, OD_ERR_ARG, "size '%s' is too large", text);
                *out_bytes = u;
                return OD_OK;
            }
            double bytes = v * suffixes[i].mult;
            if (bytes >= 18446744073709551615.0)
                return od_fail(err, OD_ERR_ARG, "size '%s' is too large", text);
            *out_bytes = (uint64_t)(bytes + 0.5);
            return OD_OK;
        }
    }
    return od_fail(err, OD_ERR_ARG, "'%s': unknown unit '%s' (use B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)", text, end);
}

long long od_round_clamped(double v)
{
    if (!(v == v))
        return 0;
    if (v > 9.0e18)
        return 9000000000000000000LL;
    if (v < -9.0e18)
        return -9000000000000000000LL;
    return llround(v);
}
