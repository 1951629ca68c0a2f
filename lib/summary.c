/* summary.c - per-device figures, the trace's peak, and live memory by source site. */
#include "summary.h"

#include <stdlib.h>
#include <string.h>

#include "mem.h"
#include "sites.h"
#include "u64map.h"

#define PAGE_SMALL ((uint64_t)2 << 20)  /* expandable segments map 2 MiB pages (small pool) */
#define PAGE_LARGE ((uint64_t)20 << 20) /* and 20 MiB pages (large pool) */

/* Buckets for allocations without a stack come after the real stacks. */
enum { BUCKET_NO_FRAMES = 0, BUCKET_BEFORE = 1 };

uint64_t od_round_request(uint64_t size)
{
    if (size < 512)
        return 512;
    return (size + 511) & ~(uint64_t)511;
}

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
    qsort(rows, n, sizeof *rows, cmp_row_site);
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
    qsort(out->items, out->n, sizeof *out->items, cmp_total);
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
    qsort(busy, nb, sizeof *busy, cmp_u64);
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

static int is_live(const od_block *b)
{
    return b->state == OD_BLOCK_ACTIVE_ALLOCATED || b->state == OD_BLOCK_ACTIVE_PENDING_FREE;
}

/* Live set while walking the trace to the peak. */
typedef struct {
    uint64_t bytes, requested;
    uint32_t slot; /* stack id or bucket slot */
} live_item;

typedef struct {
    size_t index;
    uint64_t addr, size;
} early_free;

/* The trace's figures. *seen receives every address the trace allocates, mapped to the
 * stack of its last alloc (end_sites uses it too). */
static od_status trace_figures(const od_snapshot *s, const od_device_trace *tr, od_device_summary *d,
                               const site_names *nm, acc *a, od_u64map *seen, od_error *err)
{
    const od_trace_entry *e = tr->entries;
    size_t n = tr->n_entries;
    od_u64map live = {0};     /* address -> index into items */
    live_item *items = NULL;
    size_t n_items = 0, cap_items = 0;
    early_free *early = NULL; /* frees of addresses the trace had not allocated yet */
    size_t n_early = 0, cap_early = 0;
    tally *t = NULL;
    od_status rc = OD_ERR_NOMEM;
    uint64_t start = 0;

    d->has_trace = 1;
    d->entries = n;
    if (n) {
        d->first_time_us = e[0].time_us;
        d->last_time_us = e[n - 1].time_us;
    }
    /* One walk: the start value (frees of addresses the trace never allocated before them,
     * plus blocks below), and the running sum of alloc - free_completed, whose first maximum
     * is the peak once the start value is added. */
    size_t n_oom = 0, cap_oom = 0;
    size_t *oom_at = NULL;    /* indices of the oom entries */
    int64_t run = 0, best = 0;
    d->has_peak_entry = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t dummy;
        if (e[i].action == OD_ACT_ALLOC) {
            if (!od_u64map_put(seen, e[i].addr, e[i].stack))
                goto out;
            if (__builtin_add_overflow(run, (int64_t)e[i].size, &run))
                a->overflow = 1;
            if (run > best) {
                best = run;
                d->has_peak_entry = 1;
                d->peak_index = i;
                d->peak_time_us = e[i].time_us;
            }
            continue;
        }
        if (e[i].action == OD_ACT_FREE_COMPLETED && __builtin_sub_overflow(run, (int64_t)e[i].size, &run))
            a->overflow = 1;
        if (e[i].action == OD_ACT_FREE_COMPLETED && !od_u64map_get(seen, e[i].addr, &dummy)) {
            start = add(a, start, e[i].size);
            if (!od_grow((void **)&early, &cap_early, n_early + 1, sizeof *early))
                goto out;
            early[n_early++] = (early_free){i, e[i].addr, e[i].size};
        } else if (e[i].action == OD_ACT_OOM) {
            if (!od_grow((void **)&oom_at, &cap_oom, n_oom + 1, sizeof *oom_at))
                goto out;
            oom_at[n_oom++] = i;
        }
    }
#define ADD_ITEM(addr_, bytes_, req_, slot_)                                                   \
    do {                                                                                       \
        if (!od_grow((void **)&items, &cap_items, n_items + 1, sizeof *items))                \
            goto out;                                                                          \
        items[n_items] = (live_item){(bytes_), (req_), (uint32_t)(slot_)};                     \
        if (!od_u64map_put(&live, (addr_), (uint32_t)n_items))                                 \
            goto out;                                                                          \
        n_items++;                                                                             \
    } while (0)
    /* ... plus blocks live at the end whose address the trace never allocated: they were
     * live all along, so they also start the live set walked to the peak below. */
    for (size_t i = 0; i < s->n_segments; i++) {
        const od_segment *seg = &s->segments[i];
        if (seg->device != d->device)
            continue;
        for (size_t k = 0; k < seg->n_blocks; k++) {
            const od_block *b = &s->blocks[seg->first_block + k];
            uint32_t dummy;
            if (is_live(b) && !od_u64map_get(seen, b->address, &dummy)) {
                start = add(a, start, b->requested_size);
                ADD_ITEM(b->address, b->size, b->requested_size, bucket_slot(s, BUCKET_BEFORE));
            }
        }
    }
    d->start_live_requested_bytes = start;
    d->complete = start == 0;

    d->peak_requested_bytes = add(a, start, (uint64_t)best);

    d->ooms = calloc(n_oom ? n_oom : 1, sizeof *d->ooms);
    if (!d->ooms)
        goto out;
    for (size_t k = 0; k < n_oom; k++) {
        size_t i = oom_at[k];
        od_oom_event *o = &d->ooms[d->n_ooms++];
        o->index = i;
        o->size_bytes = e[i].size;
        o->device_free_bytes = e[i].device_free;
        o->time_us = e[i].time_us;
        size_t slot = e[i].stack ? e[i].stack : bucket_slot(s, BUCKET_NO_FRAMES);
        o->site = strdup(nm->site[slot]);
        o->where = strdup(nm->where[slot]);
        if (!o->site || !o->where)
            goto out;
    }

    /* Live set at the peak: what was live before the trace and is not freed by then, then
     * the trace up to the peak. */
    size_t stop = d->has_peak_entry ? d->peak_index + 1 : 0;
    for (size_t k = 0; k < n_early; k++)
        if (early[k].index >= stop)
            ADD_ITEM(early[k].addr, od_round_request(early[k].size), early[k].size, bucket_slot(s, BUCKET_BEFORE));
    for (size_t i = 0; i < stop; i++) {
        if (e[i].action == OD_ACT_ALLOC) {
            ADD_ITEM(e[i].addr, od_round_request(e[i].size), e[i].size,
                     e[i].stack ? e[i].stack : bucket_slot(s, BUCKET_NO_FRAMES));
        } else if (e[i].action == OD_ACT_FREE_COMPLETED) {
            uint32_t idx;
            if (od_u64map_get(&live, e[i].addr, &idx)) {
                items[idx].bytes = items[idx].requested = 0;
                od_u64map_del(&live, e[i].addr);
            }
        }
    }
#undef ADD_ITEM
    t = calloc(nm->n, sizeof *t);
    if (!t)
        goto out;
    size_t cursor = 0;
    uint64_t addr;
    uint32_t idx;
    while (od_u64map_next(&live, &cursor, &addr, &idx)) {
        const live_item *it = &items[idx];
        tally *x = &t[it->slot];
        x->bytes = add(a, x->bytes, it->bytes);
        x->requested = add(a, x->requested, it->requested);
        x->count++;
    }
    if (!group_sites(nm, t, &d->peak_sites))
        goto out;
    rc = OD_OK;
out:
    od_u64map_free(&live);
    free(items);
    free(early);
    free(oom_at);
    free(t);
    if (rc != OD_OK)
        od_fail(err, rc, "out of memory");
    return rc;
}

/* Live at the end, by site: active_allocated blocks. last_alloc maps each address the
 * trace allocated to its last alloc's stack (NULL without a trace). */
static od_status end_sites(const od_snapshot *s, const od_u64map *last_alloc, od_device_summary *d,
                           const site_names *nm, acc *a, od_error *err)
{
    tally *t = calloc(nm->n, sizeof *t);
    if (!t)
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < s->n_segments; i++) {
        const od_segment *seg = &s->segments[i];
        if (seg->device != d->device)
            continue;
        for (size_t k = 0; k < seg->n_blocks; k++) {
            const od_block *b = &s->blocks[seg->first_block + k];
            if (b->state != OD_BLOCK_ACTIVE_ALLOCATED)
                continue;
            size_t slot;
            uint32_t st;
            if (b->stack)
                slot = b->stack;
            else if (last_alloc && od_u64map_get(last_alloc, b->address, &st))
                slot = st ? st : bucket_slot(s, BUCKET_NO_FRAMES);
            else if (last_alloc)
                slot = bucket_slot(s, BUCKET_BEFORE);
            else
                slot = bucket_slot(s, BUCKET_NO_FRAMES);
            t[slot].bytes = add(a, t[slot].bytes, b->size);
            t[slot].requested = add(a, t[slot].requested, b->requested_size);
            t[slot].count++;
        }
    }
    int ok = group_sites(nm, t, &d->top_sites);
    free(t);
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
        const od_device_trace *tr = NULL;
        for (size_t i = 0; i < s->n_traces; i++)
            if (s->traces[i].device == dev)
                tr = &s->traces[i];
        if (!present && !(tr && tr->n_entries))
            continue;
        od_device_summary *d = &sum->devices[sum->n_devices++];
        d->device = dev;
        if (!segments_figures(s, dev, d, &a)) {
            rc = od_fail(err, OD_ERR_NOMEM, "out of memory");
            break;
        }
        od_u64map seen = {0};
        if (s->has_traces && tr)
            rc = trace_figures(s, tr, d, &nm, &a, &seen, err);
        else if (s->has_traces)
            d->has_trace = 1, d->complete = 1;
        if (rc == OD_OK)
            rc = end_sites(s, s->has_traces ? &seen : NULL, d, &nm, &a, err);
        od_u64map_free(&seen);
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
    }
    free(s->devices);
    free(s);
}
