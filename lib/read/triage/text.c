/* text.c - phrases and sizes in free text (see text.h). */
#include "read/triage/text.h"

#include <ctype.h>
#include <string.h>

#define L16(c) c, c + 1, c + 2, c + 3, c + 4, c + 5, c + 6, c + 7, c + 8, c + 9, c + 10, c + 11, c + 12, c + 13, c + 14, c + 15
const unsigned char od_tr_fold_table[256] = {
    L16(0x00), L16(0x10), L16(0x20), L16(0x30),
    0x40, 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l', 'm', 'n', 'o',
    'p', 'q', 'r', 's', 't', 'u', 'v', 'w', 'x', 'y', 'z', 0x5b, 0x5c, 0x5d, 0x5e, 0x5f,
    L16(0x60), L16(0x70), L16(0x80), L16(0x90), L16(0xa0), L16(0xb0), L16(0xc0), L16(0xd0),
    L16(0xe0), L16(0xf0),
};
#undef L16

/* Every control byte but '\n' (a CR, a NUL made a space, unwrap's markers), the space, DEL. */
const unsigned char od_tr_blank_table[256] = {
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, [0x7f] = 1,
};

const char *od_tr_match_at(const char *lo, const char *p, const char *hi, const char *ph, size_t n, unsigned flags)
{
    if (n == 0)
        return NULL;
    if (flags & OD_TR_LINE_START) {
        for (const char *q = p; q > lo; q--)
            if (!OD_TR_BLANK(q[-1]))
                return NULL;
    } else if (p > lo && !(memchr(ph, ' ', n) && isupper((unsigned char)*p)) &&
               !od_tr_boundary_ok((unsigned char)p[-1], (unsigned char)ph[0])) {
        return NULL;
    }
    const char *q = p;
    for (size_t j = 0; j < n; j++) {
        unsigned char c = (unsigned char)ph[j];
        if (c == ' ') {
            while (q < hi && OD_TR_BLANK(*q))
                q++;
            continue;
        }
        while (q < hi && *q == OD_TR_GLUE)
            q++;
        if (q >= hi)
            return NULL;
        if ((flags & OD_TR_EXACT) ? (unsigned char)*q != c : OD_TR_FOLD(*q) != OD_TR_FOLD(c))
            return NULL;
        q++;
    }
    if (!(flags & OD_TR_PREFIX) && q < hi && !(memchr(ph, ' ', n) && isupper((unsigned char)*q)) &&
        !od_tr_boundary_ok((unsigned char)*q, (unsigned char)ph[n - 1]))
        return NULL;
    return q;
}

const char *od_tr_find(const char *lo, const char *p, const char *hi, const char *ph, unsigned flags,
                       const char **mend)
{
    size_t n = strlen(ph);
    if (n == 0)
        return NULL;
    unsigned char f = OD_TR_FOLD(ph[0]);
    for (; p < hi; p++) {
        if (OD_TR_FOLD(*p) != f)
            continue;
        const char *e = od_tr_match_at(lo, p, hi, ph, n, flags);
        if (e) {
            if (mend)
                *mend = e;
            return p;
        }
    }
    return NULL;
}

const char *od_tr_ifind(const char *line, const char *le, const char *ph)
{
    return od_tr_find(line, line, le, ph, 0, NULL);
}

const char *od_tr_ends(const char *lo, const char *p, const char *ph)
{
    size_t n = strlen(ph);
    const char *q = p;
    for (size_t j = n; j-- > 0;) {
        unsigned char c = (unsigned char)ph[j];
        if (c == ' ') {
            while (q > lo && OD_TR_BLANK(q[-1]))
                q--;
            continue;
        }
        while (q > lo && q[-1] == OD_TR_GLUE)
            q--;
        if (q <= lo || OD_TR_FOLD(q[-1]) != OD_TR_FOLD(c))
            return NULL;
        q--;
    }
    if (n && q > lo && !od_tr_boundary_ok((unsigned char)q[-1], (unsigned char)ph[0]))
        return NULL;
    return q;
}

const char *od_tr_starts(const char *p, const char *hi, const char *ph)
{
    return od_tr_match_at(p, p, hi, ph, strlen(ph), 0);
}

const char *od_tr_find_exact(const char *p, const char *end, const char *needle)
{
    size_t n = strlen(needle);
    if (n == 0 || !p || p >= end || (size_t)(end - p) < n)
        return NULL;
    for (const char *last = end - n; p <= last; p++) {
        p = memchr(p, needle[0], (size_t)(last - p) + 1);
        if (!p)
            return NULL;
        if (memcmp(p, needle, n) == 0)
            return p;
    }
    return NULL;
}

int od_tr_starts_exact(const char *p, const char *end, const char *s)
{
    size_t n = strlen(s);
    return (size_t)(end - p) >= n && memcmp(p, s, n) == 0;
}

const char *od_tr_skip_sp(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    return p;
}

const char *od_tr_parse_uint(const char *p, const char *end, uint64_t *out)
{
    const char *s = p;
    uint64_t v = 0;
    while (p < end && isdigit((unsigned char)*p)) {
        if (p - s >= 19)
            return NULL;
        v = v * 10 + (uint64_t)(*p - '0');
        p++;
    }
    if (p == s)
        return NULL;
    *out = v;
    return p;
}

/* Units as the frameworks print them, of either case. OOM messages of Apple's MPS backend
 * print "GB" for 1024-based values in older builds; TF and PyTorch only ever print binary
 * units, so inside these texts every K/M/G/T means a power of 1024. */
static const struct { const char *name; uint64_t mult; } units[] = {
    {"bytes", 1}, {"KiB", 1ULL << 10}, {"MiB", 1ULL << 20}, {"GiB", 1ULL << 30},
    {"TiB", 1ULL << 40}, {"PiB", 1ULL << 50}, {"EiB", 1ULL << 60}, {"KB", 1ULL << 10},
    {"MB", 1ULL << 20}, {"GB", 1ULL << 30}, {"TB", 1ULL << 40},
    {"PB", 1ULL << 50}, {"EB", 1ULL << 60}, {"B", 1},
};

/* A decimal "9.71" or "8589934592" exactly at p: its digits as one integer (mant), 10^(digits
 * after the point) (scale) and that count (frac, at most 9); 19 digits at most in all. Returns
 * the end of the number, or NULL when none starts at p or it is too long to be exact. */
static const char *read_decimal(const char *p, const char *end, uint64_t *mant, uint64_t *scale, int *frac)
{
    int digits = 0;
    *mant = 0;
    *scale = 1;
    *frac = 0;
    if (p >= end || !isdigit((unsigned char)*p))
        return NULL;
    while (p < end && isdigit((unsigned char)*p)) {
        if (++digits > 19)
            return NULL;
        *mant = *mant * 10 + (uint64_t)(*p++ - '0');
    }
    if (p + 1 < end && *p == '.' && isdigit((unsigned char)p[1])) {
        p++;
        while (p < end && isdigit((unsigned char)*p)) {
            if (++digits > 19 || *frac >= 9)
                return NULL;
            *mant = *mant * 10 + (uint64_t)(*p++ - '0');
            *scale *= 10;
            (*frac)++;
        }
    }
    return p;
}

/* Does the unit u (case folded) start at p, not followed by a letter or digit? */
static const char *unit_at(const char *p, const char *end, const char *u)
{
    size_t n = strlen(u);
    if ((size_t)(end - p) < n)
        return NULL;
    for (size_t i = 0; i < n; i++)
        if (OD_TR_FOLD(p[i]) != OD_TR_FOLD(u[i]))
            return NULL;
    if (p + n < end && isalnum((unsigned char)p[n]))
        return NULL;
    return p + n;
}

int od_tr_parse_size(const char *p, const char *end, od_tr_size *t)
{
    const char *s = p;
    uint64_t mant, scale;
    int frac;
    if (!(p = read_decimal(p, end, &mant, &scale, &frac)))
        return 0;
    const char *u = od_tr_skip_sp(p, end);
    if (u - p > 1)
        return 0;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        const char *ue = unit_at(u, end, units[i].name);
        if (!ue)
            continue;
        unsigned __int128 v = (unsigned __int128)mant * units[i].mult;
        v = (v + scale / 2) / scale;
        if (v > (unsigned __int128)(UINT64_MAX / 2))
            return 0; /* absurd: refuse rather than wrap */
        t->start = s;
        t->end = ue;
        t->bytes = (uint64_t)v;
        t->rounded = frac > 0;
        t->unit = units[i].mult;
        return 1;
    }
    return 0;
}

int od_tr_next_size(const char *p, const char *end, const char *line, od_tr_size *t)
{
    for (; p < end; p++) {
        if (!isdigit((unsigned char)*p))
            continue;
        if (p > line && (isalnum((unsigned char)p[-1]) || p[-1] == '.' || p[-1] == '_'))
            continue;
        if (od_tr_parse_size(p, end, t))
            return 1;
        while (p + 1 < end && (isdigit((unsigned char)p[1]) || p[1] == '.'))
            p++;
    }
    return 0;
}

int od_tr_parse_xla_size(const char *p, const char *end, od_tr_size *t)
{
    const char *s = p;
    uint64_t mant, scale;
    int frac;
    if (!(p = read_decimal(p, end, &mant, &scale, &frac)) || p >= end)
        return 0;
    static const char letters[] = "BKMGTP";
    const char *l = *p ? strchr(letters, *p) : NULL;
    if (!l || (p + 1 < end && isalnum((unsigned char)p[1])))
        return 0;
    unsigned __int128 v = (unsigned __int128)mant << (10 * (l - letters));
    v = (v + scale / 2) / scale;
    if (v > (unsigned __int128)(UINT64_MAX / 2))
        return 0;
    t->start = s;
    t->end = p + 1;
    t->bytes = (uint64_t)v;
    t->rounded = frac > 0;
    t->unit = 1ULL << (10 * (l - letters));
    return 1;
}
