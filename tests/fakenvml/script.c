/* script.c - parser of the fake NVML playback script (see script.h). */
#include "script.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *text;
    size_t len, pos; /* pos: current read position in text */
    char *err;
    size_t errsize;
} cursor;

static int fail(cursor *c, size_t at, const char *fmt, ...)
{
    va_list ap;
    int k = snprintf(c->err, c->errsize, "byte %zu: ", at);
    if (k < 0 || (size_t)k >= c->errsize)
        return -1;
    va_start(ap, fmt);
    vsnprintf(c->err + k, c->errsize - (size_t)k, fmt, ap);
    va_end(ap);
    return -1;
}

static int blank(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\r';
}

/* Next blank-separated token of the current line into tok (at most toksize-1 chars). */
static int token(cursor *c, size_t end, char *tok, size_t toksize, size_t *at)
{
    while (c->pos < end && blank(c->text[c->pos]))
        c->pos++;
    *at = c->pos;
    if (c->pos >= end)
        return 0;
    size_t k = 0;
    while (c->pos < end && !blank(c->text[c->pos])) {
        if (k + 1 >= toksize)
            return fail(c, c->pos, "token longer than %zu bytes", toksize - 1), -1;
        tok[k++] = c->text[c->pos++];
    }
    tok[k] = 0;
    return 1;
}

static int need(cursor *c, size_t end, char *tok, size_t toksize, size_t *at, const char *what)
{
    int r = token(c, end, tok, toksize, at);
    if (r == 0)
        return fail(c, *at, "expected %s", what);
    return r < 0 ? -1 : 0;
}

static int parse_u64(cursor *c, const char *tok, size_t at, uint64_t *out, const char *what)
{
    char *e;
    if (tok[0] < '0' || tok[0] > '9')
        return fail(c, at, "expected %s (an unsigned integer), got '%s'", what, tok);
    errno = 0;
    unsigned long long v = strtoull(tok, &e, 10);
    if (errno || *e)
        return fail(c, at, "expected %s (an unsigned integer), got '%s'", what, tok);
    *out = v;
    return 0;
}

static int parse_dbl(cursor *c, const char *tok, size_t at, double *out, const char *what)
{
    char *e;
    errno = 0;
    double v = strtod(tok, &e);
    if (errno || *e || e == tok || !isfinite(v) || v < 0)
        return fail(c, at, "expected %s (a non-negative number), got '%s'", what, tok);
    *out = v;
    return 0;
}

/* The rest of the line, trimmed, as a name. */
static int rest(cursor *c, size_t end, char *out, size_t size, const char *what)
{
    while (c->pos < end && blank(c->text[c->pos]))
        c->pos++;
    size_t a = c->pos, b = end;
    while (b > a && blank(c->text[b - 1]))
        b--;
    if (b == a)
        return fail(c, a, "expected %s", what);
    if (b - a >= size)
        return fail(c, a, "%s longer than %zu bytes", what, size - 1);
    memcpy(out, c->text + a, b - a);
    out[b - a] = 0;
    c->pos = end;
    return 0;
}

static int device_ref(cursor *c, fake_script *s, const char *tok, size_t at, int *dev)
{
    uint64_t v;
    if (parse_u64(c, tok, at, &v, "a device index") != 0)
        return -1;
    if (v >= (uint64_t)s->n_devices)
        return fail(c, at, "device %s is not declared (declare it with 'device' first)", tok);
    *dev = (int)v;
    return 0;
}

static int line(cursor *c, fake_script *s, size_t end)
{
    char tok[128];
    size_t at;
    int r = token(c, end, tok, sizeof tok, &at);
    if (r <= 0)
        return r; /* blank line or error */
    if (strcmp(tok, "driver") == 0)
        return rest(c, end, s->driver, sizeof s->driver, "a driver version");
    if (strcmp(tok, "speed") == 0) {
        if (need(c, end, tok, sizeof tok, &at, "a speed factor") || parse_dbl(c, tok, at, &s->speed, "a speed factor"))
            return -1;
        if (s->speed <= 0 || s->speed > 1e6)
            return fail(c, at, "speed must be in (0, 1e6]");
    } else if (strcmp(tok, "after_end") == 0) {
        if (need(c, end, tok, sizeof tok, &at, "hold or lost"))
            return -1;
        if (strcmp(tok, "hold") && strcmp(tok, "lost"))
            return fail(c, at, "expected hold or lost, got '%s'", tok);
        s->lost_after_end = strcmp(tok, "lost") == 0;
    } else if (strcmp(tok, "api") == 0) {
        if (need(c, end, tok, sizeof tok, &at, "v2 or v1"))
            return -1;
        if (strcmp(tok, "v2") && strcmp(tok, "v1"))
            return fail(c, at, "expected memory api v2 or v1, got '%s'", tok);
        s->mem_api = tok[1] - '0';
        if (need(c, end, tok, sizeof tok, &at, "v3, v2, v1 or none"))
            return -1;
        if (strcmp(tok, "v3") == 0 || strcmp(tok, "v2") == 0 || strcmp(tok, "v1") == 0)
            s->procs_api = tok[1] - '0';
        else if (strcmp(tok, "none") == 0)
            s->procs_api = 0;
        else
            return fail(c, at, "expected process api v3, v2, v1 or none, got '%s'", tok);
    } else if (strcmp(tok, "device") == 0) {
        if (s->n_devices >= FAKE_MAX_DEVICES)
            return fail(c, at, "more than %d devices", FAKE_MAX_DEVICES);
        fake_device *d = &s->devices[s->n_devices];
        memset(d, 0, sizeof *d);
        if (need(c, end, tok, sizeof tok, &at, "total bytes") || parse_u64(c, tok, at, &d->total, "total bytes") ||
            need(c, end, tok, sizeof tok, &at, "reserve bytes") || parse_u64(c, tok, at, &d->reserve, "reserve bytes") ||
            need(c, end, d->uuid, sizeof d->uuid, &at, "a UUID") || rest(c, end, d->name, sizeof d->name, "a device name"))
            return -1;
        if (d->reserve > d->total)
            return fail(c, at, "reserve exceeds total");
        d->parent = -1;
        s->n_devices++;
    } else if (strcmp(tok, "mig") == 0) {
        int p = 0;
        if (need(c, end, tok, sizeof tok, &at, "a device index") || device_ref(c, s, tok, at, &p))
            return -1;
        fake_device *parent = &s->devices[p];
        if (parent->n_mig >= FAKE_MAX_MIG)
            return fail(c, at, "more than %d MIG instances on device %d", FAKE_MAX_MIG, p);
        fake_device *m = &s->migs[s->n_migs];
        memset(m, 0, sizeof *m);
        if (need(c, end, tok, sizeof tok, &at, "total bytes") || parse_u64(c, tok, at, &m->total, "total bytes") ||
            need(c, end, tok, sizeof tok, &at, "used bytes") || parse_u64(c, tok, at, &m->mig_used, "used bytes") ||
            need(c, end, m->uuid, sizeof m->uuid, &at, "a UUID") || rest(c, end, m->name, sizeof m->name, "a MIG name"))
            return -1;
        if (m->mig_used > m->total)
            return fail(c, at, "used exceeds total");
        m->is_mig = 1;
        m->parent = p;
        parent->migs[parent->n_mig++] = m;
        s->n_migs++;
    } else if (strcmp(tok, "sample") == 0) {
        int di = 0;
        fake_sample smp;
        memset(&smp, 0, sizeof smp);
        if (need(c, end, tok, sizeof tok, &at, "a device index") || device_ref(c, s, tok, at, &di))
            return -1;
        fake_device *d = &s->devices[di];
        if (need(c, end, tok, sizeof tok, &at, "a time in seconds") || parse_dbl(c, tok, at, &smp.t, "a time in seconds"))
            return -1;
        if (d->n_samples && smp.t < d->samples[d->n_samples - 1].t)
            return fail(c, at, "sample time %s goes backwards", tok);
        if (need(c, end, tok, sizeof tok, &at, "used bytes") || parse_u64(c, tok, at, &smp.used, "used bytes"))
            return -1;
        if (smp.used > d->total || smp.used < d->reserve)
            return fail(c, at, "used bytes outside [reserve, total]");
        if (d->n_samples >= FAKE_MAX_SAMPLES)
            return fail(c, at, "more than %d samples", FAKE_MAX_SAMPLES);
        smp.proc_first = s->n_procs;
        while ((r = token(c, end, tok, sizeof tok, &at)) > 0) {
            char *eq = strchr(tok, '=');
            fake_proc pr;
            uint64_t pid;
            if (!eq)
                return fail(c, at, "expected PID=BYTES, got '%s'", tok);
            *eq = 0;
            if (parse_u64(c, tok, at, &pid, "a PID") != 0)
                return -1;
            if (pid == 0 || pid > 0xffffffffu)
                return fail(c, at, "PID out of range");
            pr.pid = (uint32_t)pid;
            if (strcmp(eq + 1, "?") == 0)
                pr.used = UINT64_MAX;
            else if (parse_u64(c, eq + 1, at, &pr.used, "process bytes") != 0)
                return -1;
            if (smp.proc_count >= FAKE_MAX_PROCS)
                return fail(c, at, "more than %d processes in one sample", FAKE_MAX_PROCS);
            if (s->n_procs == s->cap_procs) {
                size_t nc = s->cap_procs ? s->cap_procs * 2 : 64;
                fake_proc *np = realloc(s->procs, nc * sizeof *np);
                if (!np)
                    return fail(c, at, "out of memory");
                s->procs = np;
                s->cap_procs = nc;
            }
            s->procs[s->n_procs++] = pr;
            smp.proc_count++;
        }
        if (r < 0)
            return -1;
        if (d->n_samples == d->cap_samples) {
            size_t nc = d->cap_samples ? d->cap_samples * 2 : 64;
            fake_sample *ns = realloc(d->samples, nc * sizeof *ns);
            if (!ns)
                return fail(c, at, "out of memory");
            d->samples = ns;
            d->cap_samples = nc;
        }
        d->samples[d->n_samples++] = smp;
    } else {
        return fail(c, at, "unknown directive '%s' (expected driver, speed, after_end, api, device, mig or sample)", tok);
    }
    if (token(c, end, tok, sizeof tok, &at) != 0)
        return fail(c, at, "unexpected text at the end of the line");
    return 0;
}

int fake_script_parse(const char *text, size_t len, fake_script *s, char *errbuf, size_t errsize)
{
    memset(s, 0, sizeof *s);
    s->speed = 1;
    s->mem_api = 2;
    s->procs_api = 3;
    snprintf(s->driver, sizeof s->driver, "580.159.04");
    cursor c = {text, len, 0, errbuf, errsize};
    if (errsize)
        errbuf[0] = 0;
    while (c.pos < len) {
        size_t end = c.pos;
        while (end < len && text[end] != '\n')
            end++;
        size_t hash = c.pos;
        while (hash < end && text[hash] != '#')
            hash++;
        for (size_t i = c.pos; i < hash; i++)
            if (text[i] == 0)
                return fail(&c, i, "NUL byte in script");
        if (line(&c, s, hash) < 0)
            return -1;
        c.pos = end + 1;
    }
    return 0;
}

void fake_script_free(fake_script *s)
{
    for (int i = 0; i < s->n_devices; i++)
        free(s->devices[i].samples);
    free(s->procs);
    memset(s, 0, sizeof *s);
}
