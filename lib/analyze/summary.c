/* summary.c - per-device figures, the trace's peak, and live memory by source site. */
#include "analyze/summary.h"

#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/u64map.h"
#include "model/sites.h"

#define PAGE_SMALL ((uint64_t)2 << 20)  /* expandable segments map 2 MiB pages (small pool) */
#define PAGE_LARGE ((uint64_t)20 << 20) /* and 20 MiB pages (large pool) */

/* Buckets for allocations without a stack come after the real stacks. */
enum { BUCKET_NO_FRAMES = 0, BUCKET_BEFORE = 1 };

typedef struct {
    int overflow;
} acc;

static uint64_t add(acc *a, uint64_t x, uint64_t y)
{
    uint64_t r;
    if (__builtin_add_overflow(x, y, &r))
        a->overflow = 1;
    return r;
}

/* Totals per stack (index = stack id), plus the two buckets at n_stacks and n_stacks+1. */
typedef struct {
    uint64_t bytes, requested, count;
} tally;

static size_t bucket_slot(const od_snapshot *s, int bucket)
{
    return s->n_stacks + (size_t)bucket;
}

typedef struct {
    const char *site;
    const char *where;
    tally t;
} row;

static int cmp_row_site(const void *pa, const void *pb)
{
    const row *a = pa, *b = pb;
    int c = strcmp(a->site, b->site);
    return c ? c : strcmp(a->where, b->where);
}

static int cmp_total(const void *pa, const void *pb)
{
    const od_site_total *a = pa, *b = pb;
    if (a->bytes != b->bytes)
        return a->bytes > b->bytes ? -1 : 1;
    if (a->requested_bytes != b->requested_bytes)
        return a->requested_bytes > b->requested_bytes ? -1 : 1;
    return strcmp(a->site, b->site);
}

/* Site and where strings of every stack (index = stack id; buckets after). */
typedef struct {
    char **site;
    char **where;
    size_t n;
} site_names;

static int names_init(const od_snapshot *s, site_names *nm)
{
    nm->n = s->n_stacks + 2;
    nm->site = calloc(nm->n, sizeof(char *));
    nm->where = calloc(nm->n, sizeof(char *));
    if (!nm->site || !nm->where)
        return 0;
    char buf[1024];
    for (size_t i = 0; i < s->n_stacks; i++) {
        int64_t sf, wf;
        od_stack_site(s, (uint32_t)i, &sf, &wf);
        nm->site[i] = strdup(od_frame_format(s, sf, buf, sizeof buf));
        nm->where[i] = strdup(od_frame_format(s, wf, buf, sizeof buf));
        if (!nm->site[i] || !nm->where[i])
            return 0;
    }
    nm->site[bucket_slot(s, BUCKET_NO_FRAMES)] = strdup(OD_SITE_NO_FRAMES);
    nm->where[bucket_slot(s, BUCKET_NO_FRAMES)] = strdup(OD_SITE_NO_FRAMES);
    nm->site[bucket_slot(s, BUCKET_BEFORE)] = strdup(OD_SITE_BEFORE_TRACE);
    nm->where[bucket_slot(s, BUCKET_BEFORE)] = strdup(OD_SITE_BEFORE_TRACE);
    for (size_t i = s->n_stacks; i < nm->n; i++)
        if (!nm->site[i] || !nm->where[i])
            return 0;
    return 1;
}

static void names_free(site_names *nm)
{
    for (size_t i = 0; i < nm->n; i++) {
        if (nm->site)
            free(nm->site[i]);
        if (nm->where)
            free(nm->where[i]);
    }
    free(nm->site);
    free(nm->where);
}

/* Group per-stack tallies by site string into a sorted list. */
static int group_sites(const site_names *nm, const tally *t, od_site_list *out)
{
    size_t n = 0;
    for (size_t i = 0; i < nm->n; i++)
        if (t[i].count)
            n++;
    row *rows = malloc((n ? n : 1) * sizeof *rows);
    out->items = calloc(n ? n : 1, sizeof *out->items);
    if (!rows || !out->items) {
        free(rows);
        return 0;
    }
    n = 0;
    for (size_t i = 0; i < nm->n; i++)
        if (t[i].count)
            rows[n++] = (row){nm->site[i], nm->where[i], t[i]};
    od_sort(rows, n, sizeof *rows, cmp_row_site);
    /* One group per site; its "where" is the one holding the most bytes within it. */
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        od_site_total *g = &out->items[k];
        const char *best_where = rows[i].where;
        uint64_t best = 0;
        while (j < n && strcmp(rows[j].site, rows[i].site) == 0) {
            size_t w = j;
            uint64_t wb = 0;
            while (w < n && strcmp(rows[w].site, rows[i].site) == 0 && strcmp(rows[w].where, rows[j].where) == 0) {
                wb += rows[w].t.bytes;
                g->bytes += rows[w].t.bytes;
                g->requested_bytes += rows[w].t.requested;
                g->count += rows[w].t.count;
                w++;
            }
            if (wb > best || j == i) {
                best = wb;
                best_where = rows[j].where;
            }
            j = w;
        }
        g->site = strdup(rows[i].site);
        g->where = strdup(best_where);
        out->n = ++k;
        if (!g->site || !g->where) {
            free(rows);
            return 0;
        }
        i = j;
    }
    out->n = k;
    free(rows);
    od_sort(out->items, out->n, sizeof *out->items, cmp_total);
    return 1;
}

static void site_list_free(od_site_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->items[i].site);
        free(l->items[i].where);
    }
    free(l->items);
}

static int cmp_u64(const void *pa, const void *pb)
{
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    return a < b ? -1 : a > b;
}

static int page_busy(const uint64_t *pages, size_t n, uint64_t page)
{
    return bsearch(&page, pages, n, sizeof *pages, cmp_u64) != NULL;
}

/* Inactive bytes of an expandable segment that share a page with a non-inactive block. */
static int stranded_expandable(const od_snapshot *s, const od_segment *seg, acc *a, uint64_t *out)
{
    uint64_t page = seg->is_large ? PAGE_LARGE : PAGE_SMALL;
    const od_block *b = s->blocks + seg->first_block;
    /* A busy block covers whole pages between its first and last page, where no inactive
     * block can be: only its first and last page can be shared. */
    uint64_t *busy = malloc((2 * seg->n_blocks + 1) * sizeof *busy);
    if (!busy)
        return 0;
    size_t nb = 0;
    for (size_t i = 0; i < seg->n_blocks; i++) {
        if (b[i].state == OD_BLOCK_INACTIVE || b[i].size == 0)
            continue;
        uint64_t off = b[i].address - seg->address;
        busy[nb++] = off / page;
        busy[nb++] = (off + b[i].size - 1) / page;
    }
    od_sort(busy, nb, sizeof *busy, cmp_u64);
    for (size_t i = 0; i < seg->n_blocks; i++) {
        if (b[i].state != OD_BLOCK_INACTIVE || b[i].size == 0)
            continue;
        uint64_t start = b[i].address - seg->address, end = start + b[i].size;
        uint64_t first = start / page, last = (end - 1) / page;
        for (uint64_t pg = first;; pg = last) {
            if (page_busy(busy, nb, pg)) {
                uint64_t ps = pg * page, pe = ps + page;
                uint64_t lo = start > ps ? start : ps, hi = end < pe ? end : pe;
                *out = add(a, *out, hi - lo);
            }
            if (pg == last)
                break;
        }
    }
    free(busy);
    return 1;
}

static int segments_figures(const od_snapshot *s, int64_t device, od_device_summary *d, acc *a)
{
    for (size_t i = 0; i < s->n_segments; i++) {
        const od_segment *seg = &s->segments[i];
        if (seg->device != device)
            continue;
        d->segments++;
        d->reserved_bytes = add(a, d->reserved_bytes, seg->total_size);
        if (seg->is_expandable)
            d->expandable_segments++;
        uint64_t inactive = 0;
        int busy = 0;
        for (size_t k = 0; k < seg->n_blocks; k++) {
            const od_block *b = &s->blocks[seg->first_block + k];
            switch (b->state) {
            case OD_BLOCK_ACTIVE_ALLOCATED:
                d->allocated_bytes = add(a, d->allocated_bytes, b->size);
                d->requested_bytes = add(a, d->requested_bytes, b->requested_size);
                d->active_bytes = add(a, d->active_bytes, b->size);
                busy = 1;
                break;
            case OD_BLOCK_ACTIVE_PENDING_FREE:
                d->active_bytes = add(a, d->active_bytes, b->size);
                busy = 1;
                break;
            case OD_BLOCK_INACTIVE:
                inactive = add(a, inactive, b->size);
                if (b->size > d->largest_free_block_bytes)
                    d->largest_free_block_bytes = b->size;
                break;
            default:
                busy = 1;
                break;
            }
        }
        if (seg->is_expandable) {
            if (!stranded_expandable(s, seg, a, &d->stranded_bytes))
                return 0;
        } else if (busy) {
            d->stranded_bytes = add(a, d->stranded_bytes, inactive);
        }
    }
    return 1;
}

/* The trace's figures, from the device's trace model. */
static od_status trace_figures(const od_snapshot *s, const od_trace *t, od_device_summary *d, const site_names *nm,
                               acc *a, od_error *err)
{
    const od_device_trace *e = t->entries;
    size_t n = t->n_entries;
    d->has_trace = 1;
    d->entries = n;
    if (n) {
        d->first_time_us = od_trace_at(e, 0).time_us;
        d->last_time_us = od_trace_at(e, n - 1).time_us;
    }
    d->start_live_requested_bytes = t->start_requested_bytes;
    d->complete = t->complete;
    d->peak_requested_bytes = t->peak_requested_bytes;
    d->has_peak_requested_entry = t->has_peak_requested;
    d->peak_requested_index = t->peak_requested_index;
    d->peak_requested_time_us = t->peak_requested_time_us;
    size_t n_oom = 0;
    for (size_t i = 0; i < n; i++)
        n_oom += od_trace_action(e, i) == OD_ACT_OOM;
    d->ooms = calloc(n_oom ? n_oom : 1, sizeof *d->ooms);
    tally *tl = calloc(nm->n, sizeof *tl);
    if (!d->ooms || !tl) {
        free(tl);
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        if (od_trace_action(e, i) != OD_ACT_OOM)
            continue;
        od_oom_event *o = &d->ooms[d->n_ooms++];
        o->index = i;
        od_trace_entry x = od_trace_at(e, i);
        o->size_bytes = x.size;
        o->device_free_bytes = x.device_free;
        o->time_us = x.time_us;
        size_t slot = x.stack ? x.stack : bucket_slot(s, BUCKET_NO_FRAMES);
        o->site = strdup(nm->site[slot]);
        o->where = strdup(nm->where[slot]);
        if (!o->site || !o->where) {
            free(tl);
            return od_fail(err, OD_ERR_NOMEM, "out of memory");
        }
    }
    /* Live at the peak (of block bytes), by site. */
    size_t at = t->has_peak ? t->peak_index : SIZE_MAX;
    for (size_t i = 0; i < t->n_lives; i++) {
        const od_lifetime *l = &t->lives[i];
        if (!od_trace_live_after(l, at))
            continue;
        od_life_origin o = od_life_of(t, l);
        size_t slot = o.stack ? o.stack
                      : l->alloc_index == OD_TRACE_BEFORE ? bucket_slot(s, BUCKET_BEFORE)
                                                          : bucket_slot(s, BUCKET_NO_FRAMES);
        tl[slot].bytes = add(a, tl[slot].bytes, l->block_bytes);
        tl[slot].requested = add(a, tl[slot].requested, o.requested_bytes);
        tl[slot].count++;
    }
    int ok = group_sites(nm, tl, &d->peak_sites);
    free(tl);
    return ok ? OD_OK : od_fail(err, OD_ERR_NOMEM, "out of memory");
}

/* Live at the end, by site: active_allocated blocks, named by their own frames, else by
 * the stack of the trace's alloc of that address (t NULL without a trace). */
static od_status end_sites(const od_snapshot *s, const od_trace *t, od_device_summary *d, const site_names *nm,
                           acc *a, od_error *err)
{
    tally *tl = calloc(nm->n, sizeof *tl);
    od_u64map last = {0}; /* address -> stack slot of a lifetime still open at the end */
    if (!tl)
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    for (size_t i = 0; t && i < t->n_lives; i++) {
        const od_lifetime *l = &t->lives[i];
        if (l->free_index != OD_TRACE_NEVER)
            continue;
        od_life_origin o = od_life_of(t, l);
        uint32_t slot = o.stack ? o.stack
                        : l->alloc_index == OD_TRACE_BEFORE ? (uint32_t)bucket_slot(s, BUCKET_BEFORE)
                                                            : (uint32_t)bucket_slot(s, BUCKET_NO_FRAMES);
        if (!od_u64map_put(&last, o.addr, slot)) {
            free(tl);
            od_u64map_free(&last);
            return od_fail(err, OD_ERR_NOMEM, "out of memory");
        }
    }
    for (size_t i = 0; i < s->n_segments; i++) {
        const od_segment *seg = &s->segments[i];
        if (seg->device != d->device)
            continue;
        for (size_t k = 0; k < seg->n_blocks; k++) {
            const od_block *b = &s->blocks[seg->first_block + k];
            if (b->state != OD_BLOCK_ACTIVE_ALLOCATED)
                continue;
            uint32_t st;
            size_t slot;
            if (b->stack)
                slot = b->stack;
            else if (t && od_u64map_get(&last, b->address, &st))
                slot = st;
            else if (s->has_traces)
                slot = bucket_slot(s, BUCKET_BEFORE);
            else
                slot = bucket_slot(s, BUCKET_NO_FRAMES);
            tl[slot].bytes = add(a, tl[slot].bytes, b->size);
            tl[slot].requested = add(a, tl[slot].requested, b->requested_size);
            tl[slot].count++;
        }
    }
    od_u64map_free(&last);
    int ok = group_sites(nm, tl, &d->top_sites);
    free(tl);
    return ok ? OD_OK : od_fail(err, OD_ERR_NOMEM, "out of memory");
}

od_status od_summarize(const od_snapshot *s, od_summary **out, od_error *err)
{
    *out = NULL;
    /* Devices present: with segments or trace entries, ascending. */
    int64_t max_dev = -1;
    for (size_t i = 0; i < s->n_segments; i++)
        if (s->segments[i].device > max_dev)
            max_dev = s->segments[i].device;
    for (size_t i = 0; i < s->n_traces; i++)
        if (s->traces[i].n_entries && s->traces[i].device > max_dev)
            max_dev = s->traces[i].device;
    od_summary *sum = calloc(1, sizeof *sum);
    if (!sum)
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    sum->devices = calloc((size_t)(max_dev + 2), sizeof *sum->devices);
    site_names nm = {0};
    if (!sum->devices || !names_init(s, &nm)) {
        names_free(&nm);
        od_summary_free(sum);
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    }
    acc a = {0};
    od_status rc = OD_OK;
    for (int64_t dev = 0; dev <= max_dev && rc == OD_OK; dev++) {
        int present = 0;
        for (size_t i = 0; i < s->n_segments && !present; i++)
            present = s->segments[i].device == dev;
        const od_device_trace *tr = od_trace_of(s, dev);
        if (!present && !(tr && tr->n_entries))
            continue;
        od_device_summary *d = &sum->devices[sum->n_devices++];
        d->device = dev;
        if (!segments_figures(s, dev, d, &a)) {
            rc = od_fail(err, OD_ERR_NOMEM, "out of memory");
            break;
        }
        rc = od_trace_open(s, dev, &d->trace, err);
        if (rc == OD_OK && d->trace->has_trace) {
            rc = trace_figures(s, d->trace, d, &nm, &a, err);
        } else if (rc == OD_OK && s->has_traces) {
            d->has_trace = 1;
            d->complete = 1;
        }
        if (rc == OD_OK)
            rc = end_sites(s, d->trace, d, &nm, &a, err);
    }
    names_free(&nm);
    if (rc == OD_OK && a.overflow)
        rc = od_fail(err, OD_ERR_LIMIT, "sizes in the snapshot add up to more than 2^64 bytes");
    if (rc != OD_OK) {
        od_summary_free(sum);
        return rc;
    }
    *out = sum;
    return OD_OK;
}

void od_summary_free(od_summary *s)
{
    if (!s)
        return;
    for (size_t i = 0; s->devices && i < s->n_devices; i++) {
        od_device_summary *d = &s->devices[i];
        for (size_t k = 0; k < d->n_ooms; k++) {
            free(d->ooms[k].site);
            free(d->ooms[k].where);
        }
        free(d->ooms);
        site_list_free(&d->top_sites);
        site_list_free(&d->peak_sites);
        od_trace_free(d->trace);
    }
    free(s->devices);
    free(s);
}
