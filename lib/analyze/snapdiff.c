/* snapdiff.c - two snapshots compared, figure by figure and site by site. */
#include "analyze/snapdiff.h"
#include "base/mem.h"
#include "model/allocsim.h"

#include <stdlib.h>
#include <string.h>

static uint64_t mag(int64_t v)
{
    return v < 0 ? (uint64_t)(-(v + 1)) + 1 : (uint64_t)v;
}

static int cmp_change(const void *pa, const void *pb)
{
    const od_site_change *a = pa, *b = pb;
    uint64_t x = mag(a->change_bytes), y = mag(b->change_bytes);
    if (x != y)
        return x > y ? -1 : 1;
    if (a->change_bytes != b->change_bytes)
        return a->change_bytes > b->change_bytes ? -1 : 1;
    return strcmp(a->site, b->site);
}

typedef struct {
    const od_site_total *t;
    int side;
} tagged;

static int cmp_tagged(const void *pa, const void *pb)
{
    const tagged *a = pa, *b = pb;
    int c = strcmp(a->t->site, b->t->site);
    return c ? c : a->side - b->side;
}

static int clamp_sub(uint64_t after, uint64_t before, int64_t *out)
{
    /* Byte counts fit in 63 bits in any real snapshot; absurd ones saturate. */
    uint64_t a = after > INT64_MAX ? INT64_MAX : after, b = before > INT64_MAX ? INT64_MAX : before;
    *out = (int64_t)a - (int64_t)b;
    return 1;
}

/* Merge two site lists by site name. */
static int merge(const od_site_list *b, const od_site_list *a, od_site_change **out, size_t *n_out)
{
    size_t n = b->n + a->n;
    tagged *all = malloc((n ? n : 1) * sizeof *all);
    od_site_change *res = calloc(n ? n : 1, sizeof *res);
    if (!all || !res) {
        free(all);
        free(res);
        return 0;
    }
    for (size_t i = 0; i < b->n; i++)
        all[i] = (tagged){&b->items[i], 0};
    for (size_t i = 0; i < a->n; i++)
        all[b->n + i] = (tagged){&a->items[i], 1};
    od_sort(all, n, sizeof *all, cmp_tagged);
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        od_site_change *c = &res[k];
        const od_site_total *big = all[i].t;
        while (j < n && strcmp(all[j].t->site, all[i].t->site) == 0) {
            if (all[j].side)
                c->after_bytes += all[j].t->bytes;
            else
                c->before_bytes += all[j].t->bytes;
            if (all[j].t->bytes > big->bytes)
                big = all[j].t;
            j++;
        }
        clamp_sub(c->after_bytes, c->before_bytes, &c->change_bytes);
        c->site = strdup(all[i].t->site);
        c->where = strdup(big->where);
        k++;
        if (!c->site || !c->where) {
            for (size_t x = 0; x < k; x++) {
                free(res[x].site);
                free(res[x].where);
            }
            free(res);
            free(all);
            return 0;
        }
        i = j;
    }
    free(all);
    od_sort(res, k, sizeof *res, cmp_change);
    *out = res;
    *n_out = k;
    return 1;
}

static int fill(od_device_change *c, const od_device_summary *b, const od_device_summary *a)
{
    static const od_site_list empty = {NULL, 0};
    const od_device_summary *s[2] = {b, a};
    for (int i = 0; i < 2; i++) {
        if (!s[i])
            continue;
        c->reserved[i] = s[i]->reserved_bytes;
        c->allocated[i] = s[i]->allocated_bytes;
        c->stranded[i] = s[i]->stranded_bytes;
        c->segments[i] = s[i]->segments;
        c->have_peak[i] = s[i]->has_trace;
        c->peak[i] = s[i]->has_trace ? s[i]->peak_requested_bytes : 0;
        const od_trace *t = s[i]->trace;
        if (s[i]->has_trace && t) {
            c->peak_allocated[i] = t->peak_block_bytes;
            c->have_reserved[i] = t->has_reserved;
            c->peak_reserved[i] = t->has_reserved ? t->max_reserved_bytes : 0;
        }
    }
    c->device_before = b ? b->device : -1;
    c->device_after = a ? a->device : -1;
    return merge(b ? &b->top_sites : &empty, a ? &a->top_sites : &empty, &c->live, &c->n_live) &&
           merge(b ? &b->peak_sites : &empty, a ? &a->peak_sites : &empty, &c->at_peak, &c->n_at_peak);
}

od_status od_snapdiff_compute(const od_summary *before, const od_summary *after, od_snapdiff **out,
                              od_error *err)
{
    *out = NULL;
    od_snapdiff *d = calloc(1, sizeof *d);
    if (!d)
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    d->devices = calloc(before->n_devices + after->n_devices + 1, sizeof *d->devices);
    if (!d->devices)
        goto nomem;
    if (before->n_devices == 1 && after->n_devices == 1) {
        if (!fill(&d->devices[d->n_devices++], &before->devices[0], &after->devices[0]))
            goto nomem;
    } else {
        /* Both lists are in ascending device order: a merge. */
        size_t i = 0, j = 0;
        while (i < before->n_devices || j < after->n_devices) {
            const od_device_summary *b = i < before->n_devices ? &before->devices[i] : NULL;
            const od_device_summary *a = j < after->n_devices ? &after->devices[j] : NULL;
            if (b && a && b->device != a->device) {
                if (b->device < a->device)
                    a = NULL;
                else
                    b = NULL;
            }
            i += b != NULL;
            j += a != NULL;
            if (!fill(&d->devices[d->n_devices++], b, a))
                goto nomem;
        }
    }
    *out = d;
    return OD_OK;
nomem:
    od_snapdiff_free(d);
    return od_fail(err, OD_ERR_NOMEM, "out of memory");
}

static void free_list(od_site_change *l, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(l[i].site);
        free(l[i].where);
    }
    free(l);
}

void od_snapdiff_free(od_snapdiff *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->n_devices; i++) {
        free_list(d->devices[i].live, d->devices[i].n_live);
        free_list(d->devices[i].at_peak, d->devices[i].n_at_peak);
    }
    free(d->devices);
    free(d);
}

void od_snapdiff_settings(od_snapdiff *d, const od_snapshot *before, const od_snapshot *after)
{
    const od_snapshot *s[2] = {before, after};
    od_allocsim_config cfg[2];
    for (int i = 0; i < 2; i++) {
        d->settings_recorded[i] = s[i] && s[i]->settings.present;
        d->settings[i][0] = 0;
        od_allocsim_config_default(&cfg[i]);
        if (!d->settings_recorded[i])
            continue;
        cfg[i].conf = s[i]->settings.conf;
        od_allocsim_config_format(&cfg[i], d->settings[i], sizeof d->settings[i]);
    }
    d->settings_differ = d->settings_recorded[0] && d->settings_recorded[1] &&
                         !od_allocsim_config_same_policy(&cfg[0], &cfg[1]);
}
