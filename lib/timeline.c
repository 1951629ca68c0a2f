/* timeline.c - memory over trace time, downsampled to a bounded number of points. */
#include "timeline.h"

#include <stdlib.h>
#include <string.h>

#include "mem.h"
#include "sites.h"
#include "u64map.h"

#define OTHER_SITES "other sites"

void od_timeline_free(od_timeline *t)
{
    if (!t)
        return;
    for (size_t i = 0; t->group_site && i < t->n_groups; i++)
        free(t->group_site[i]);
    free(t->group_site);
    free(t->time_us);
    free(t->live_bytes);
    free(t->reserved_bytes);
    free(t->group_bytes);
    free(t->iterations);
    free(t);
}

static int cmp_u64(const void *pa, const void *pb)
{
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    return a < b ? -1 : a > b;
}

/* Boundary times: END of Optimizer.step annotations on the device, else of
 * Optimizer.zero_grad; only those inside [first, last]. Returns the count (0 on none),
 * or (size_t)-1 when out of memory. */
static size_t find_boundaries(const od_snapshot *s, const od_timeline *t, uint64_t **out, const char **name)
{
    static const char *const names[] = {"Optimizer.step", "Optimizer.zero_grad"};
    *out = NULL;
    *name = NULL;
    for (size_t k = 0; k < 2; k++) {
        size_t len = strlen(names[k]), n = 0;
        uint64_t *b = malloc((s->n_annotations ? s->n_annotations : 1) * sizeof *b);
        if (!b)
            return (size_t)-1;
        for (size_t i = 0; i < s->n_annotations; i++) {
            const od_annotation *a = &s->annotations[i];
            /* torch names them "Optimizer.step#AdamW.step": match the prefix up to '#'. */
            if (a->device != t->device || !a->stage || !a->name || strcmp(a->stage, "END") != 0 ||
                strncmp(a->name, names[k], len) != 0 || (a->name[len] != '\0' && a->name[len] != '#'))
                continue;
            if (a->time_us < t->first_time_us || a->time_us > t->last_time_us)
                continue;
            b[n++] = a->time_us;
        }
        if (n) {
            qsort(b, n, sizeof *b, cmp_u64);
            *out = b;
            *name = names[k];
            return n;
        }
        free(b);
    }
    return 0;
}

typedef struct {
    uint64_t size;
    uint32_t group;
} live_item;

od_status od_timeline_build(const od_snapshot *s, const od_device_summary *d, size_t max_points,
                            size_t top_groups, od_timeline **out, od_error *err)
{
    *out = NULL;
    const od_device_trace *tr = NULL;
    for (size_t i = 0; i < s->n_traces; i++)
        if (s->traces[i].device == d->device)
            tr = &s->traces[i];
    if (!s->has_traces || !tr || !tr->n_entries)
        return od_fail(err, OD_ERR_ARG, "device %lld has no trace entries", (long long)d->device);
    if (max_points < 2)
        return od_fail(err, OD_ERR_ARG, "a timeline needs at least 2 points");

    const od_trace_entry *e = tr->entries;
    size_t n = tr->n_entries;
    od_timeline *t = calloc(1, sizeof *t);
    od_u64map live = {0};
    live_item *items = NULL;
    size_t n_items = 0, cap_items = 0;
    uint32_t *stack_group = NULL;
    uint64_t *bounds = NULL, *cur_groups = NULL;
    if (!t)
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    t->device = d->device;
    t->first_time_us = e[0].time_us;
    t->last_time_us = e[n - 1].time_us;
    for (size_t i = 0; i < n; i++) /* traces are time-ordered, but do not rely on it */
        if (e[i].time_us < t->first_time_us)
            t->first_time_us = e[i].time_us;
        else if (e[i].time_us > t->last_time_us)
            t->last_time_us = e[i].time_us;

    /* Groups: the top sites at the peak, then "other sites". */
    size_t k = d->peak_sites.n < top_groups ? d->peak_sites.n : top_groups;
    t->n_groups = k + 1;
    t->group_site = calloc(t->n_groups, sizeof *t->group_site);
    size_t cap_points = max_points + 1;
    t->time_us = malloc(cap_points * sizeof *t->time_us);
    t->live_bytes = malloc(cap_points * sizeof *t->live_bytes);
    t->reserved_bytes = malloc(cap_points * sizeof *t->reserved_bytes);
    t->group_bytes = malloc(cap_points * t->n_groups * sizeof *t->group_bytes);
    stack_group = malloc((s->n_stacks ? s->n_stacks : 1) * sizeof *stack_group);
    cur_groups = calloc(t->n_groups, sizeof *cur_groups);
    if (!t->group_site || !t->time_us || !t->live_bytes || !t->reserved_bytes || !t->group_bytes ||
        !stack_group || !cur_groups)
        goto nomem;
    for (size_t g = 0; g < k; g++)
        if (!(t->group_site[g] = strdup(d->peak_sites.items[g].site)))
            goto nomem;
    if (!(t->group_site[k] = strdup(OTHER_SITES)))
        goto nomem;

    /* Each stack's group, by its site string (as od_summarize names sites). */
    uint32_t no_frames = (uint32_t)k, before = (uint32_t)k;
    for (size_t g = 0; g < k; g++) {
        if (strcmp(t->group_site[g], OD_SITE_NO_FRAMES) == 0)
            no_frames = (uint32_t)g;
        if (strcmp(t->group_site[g], OD_SITE_BEFORE_TRACE) == 0)
            before = (uint32_t)g;
    }
    for (size_t i = 0; i < s->n_stacks; i++) {
        stack_group[i] = (uint32_t)k;
        if (i == 0) {
            stack_group[i] = no_frames;
            continue;
        }
        int64_t sf, wf;
        char buf[1024];
        od_stack_site(s, (uint32_t)i, &sf, &wf);
        od_frame_format(s, sf, buf, sizeof buf);
        for (size_t g = 0; g < k; g++)
            if (strcmp(buf, t->group_site[g]) == 0) {
                stack_group[i] = (uint32_t)g;
                break;
            }
    }

    /* Reserved at the start: the final reserve minus what the trace's segment events added. */
    int64_t net = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t sz = e[i].size > (uint64_t)INT64_MAX / 4 ? INT64_MAX / 4 : (int64_t)e[i].size;
        if (e[i].action == OD_ACT_SEGMENT_ALLOC || e[i].action == OD_ACT_SEGMENT_MAP)
            net += sz;
        else if (e[i].action == OD_ACT_SEGMENT_FREE || e[i].action == OD_ACT_SEGMENT_UNMAP)
            net -= sz;
        if (net > INT64_MAX / 2 || net < -(INT64_MAX / 2))
            break;
    }
    int64_t reserved = (int64_t)(d->reserved_bytes > (uint64_t)INT64_MAX / 2 ? INT64_MAX / 2 : d->reserved_bytes) - net;
    t->has_reserved = reserved >= 0;

    const char *bname;
    size_t nb = find_boundaries(s, t, &bounds, &bname);
    if (nb == (size_t)-1)
        goto nomem;
    if (nb) {
        t->iterations = calloc(nb, sizeof *t->iterations);
        if (!t->iterations)
            goto nomem;
        t->boundary_name = bname;
    }

    uint64_t cur = d->start_live_requested_bytes;
    cur_groups[before] = cur;
    uint64_t span = t->last_time_us - t->first_time_us;
    size_t bucket = 0, bi = 0;
    uint64_t it_peak = cur, it_peak_time = t->first_time_us;
    uint64_t peak_res = reserved > 0 ? (uint64_t)reserved : 0;

    /* Point 0: the state before the first entry. */
    t->time_us[0] = t->first_time_us;
    t->live_bytes[0] = cur;
    t->reserved_bytes[0] = peak_res;
    memcpy(t->group_bytes, cur_groups, t->n_groups * sizeof *cur_groups);
    t->n_points = 1;
    int open = 0; /* a point for the current bucket is being collected (index n_points) */

    for (size_t i = 0; i < n; i++) {
        const od_trace_entry *x = &e[i];
        while (bi < nb && bounds[bi] < x->time_us) {
            t->iterations[bi] = (od_timeline_iteration){bounds[bi], cur, it_peak, it_peak_time};
            it_peak = cur;
            it_peak_time = bounds[bi];
            bi++;
        }
        switch (x->action) {
        case OD_ACT_ALLOC: {
            cur += x->size;
            uint32_t g = x->stack < s->n_stacks ? stack_group[x->stack] : (uint32_t)k;
            cur_groups[g] += x->size;
            uint32_t idx;
            if (od_u64map_get(&live, x->addr, &idx)) { /* re-allocated without a free: replace */
                live_item *it = &items[idx];
                cur_groups[it->group] -= it->size < cur_groups[it->group] ? it->size : cur_groups[it->group];
                *it = (live_item){x->size, g};
                break;
            }
            if (!od_grow((void **)&items, &cap_items, n_items + 1, sizeof *items))
                goto nomem;
            items[n_items] = (live_item){x->size, g};
            if (!od_u64map_put(&live, x->addr, (uint32_t)n_items))
                goto nomem;
            n_items++;
            break;
        }
        case OD_ACT_FREE_COMPLETED: {
            cur = cur >= x->size ? cur - x->size : 0;
            uint32_t idx, g = before;
            uint64_t sz = x->size;
            if (od_u64map_get(&live, x->addr, &idx)) {
                g = items[idx].group;
                sz = items[idx].size;
                od_u64map_del(&live, x->addr);
            }
            cur_groups[g] -= sz < cur_groups[g] ? sz : cur_groups[g];
            break;
        }
        case OD_ACT_SEGMENT_ALLOC:
        case OD_ACT_SEGMENT_MAP:
            reserved += (int64_t)(x->size > (uint64_t)INT64_MAX / 4 ? INT64_MAX / 4 : x->size);
            break;
        case OD_ACT_SEGMENT_FREE:
        case OD_ACT_SEGMENT_UNMAP:
            reserved -= (int64_t)(x->size > (uint64_t)INT64_MAX / 4 ? INT64_MAX / 4 : x->size);
            if (reserved < 0)
                t->has_reserved = 0;
            break;
        default:
            break;
        }
        uint64_t res = reserved > 0 ? (uint64_t)reserved : 0;
        if (res > t->peak_reserved_bytes)
            t->peak_reserved_bytes = res;
        if (cur > it_peak) {
            it_peak = cur;
            it_peak_time = x->time_us;
        }
        if (x->action == OD_ACT_ALLOC && cur > t->peak_live_bytes) {
            t->peak_live_bytes = cur;
            t->peak_time_us = x->time_us;
            t->has_peak = cur > d->start_live_requested_bytes;
        }

        uint64_t dt = x->time_us > t->first_time_us ? x->time_us - t->first_time_us : 0;
        size_t b = span ? (size_t)((double)dt / ((double)span + 1.0) * (double)max_points) : 0;
        if (b >= max_points)
            b = max_points - 1;
        if (b > bucket && open) {
            t->n_points++;
            open = 0;
        }
        if (b > bucket)
            bucket = b;
        size_t p = t->n_points;
        if (!open || cur > t->live_bytes[p]) {
            t->time_us[p] = x->time_us;
            t->live_bytes[p] = cur;
            memcpy(t->group_bytes + p * t->n_groups, cur_groups, t->n_groups * sizeof *cur_groups);
            if (!open)
                t->reserved_bytes[p] = res;
        }
        if (res > t->reserved_bytes[p])
            t->reserved_bytes[p] = res;
        open = 1;
    }
    if (open)
        t->n_points++;
    for (; bi < nb; bi++) {
        t->iterations[bi] = (od_timeline_iteration){bounds[bi], cur, it_peak, it_peak_time};
        it_peak = cur;
        it_peak_time = bounds[bi];
    }
    t->n_iterations = nb;
    if (t->peak_live_bytes < d->start_live_requested_bytes) {
        t->peak_live_bytes = d->start_live_requested_bytes;
        t->peak_time_us = t->first_time_us;
    }
    if (t->peak_reserved_bytes < t->reserved_bytes[0])
        t->peak_reserved_bytes = t->reserved_bytes[0];

    free(bounds);
    free(stack_group);
    free(cur_groups);
    free(items);
    od_u64map_free(&live);
    *out = t;
    return OD_OK;
nomem:
    free(bounds);
    free(stack_group);
    free(cur_groups);
    free(items);
    od_u64map_free(&live);
    od_timeline_free(t);
    return od_fail(err, OD_ERR_NOMEM, "out of memory");
}

/* ---------- layout at one moment ---------- */

void od_layout_free(od_layout *l)
{
    if (!l)
        return;
    free(l->segments);
    free(l->blocks);
    free(l);
}

typedef struct {
    uint64_t start, end;
} range;

static int cmp_range(const void *pa, const void *pb)
{
    const range *a = pa, *b = pb;
    return a->start < b->start ? -1 : a->start > b->start;
}

static int cmp_lblock(const void *pa, const void *pb)
{
    const od_layout_block *a = pa, *b = pb;
    return a->address < b->address ? -1 : a->address > b->address;
}

/* Ranges as a growable array; removing cuts [a, z) out of every range it overlaps. */
typedef struct {
    range *r;
    size_t n, cap;
} ranges;

static int ranges_add(ranges *rs, uint64_t a, uint64_t z)
{
    if (z <= a)
        return 1;
    if (!od_grow((void **)&rs->r, &rs->cap, rs->n + 1, sizeof *rs->r))
        return 0;
    rs->r[rs->n++] = (range){a, z};
    return 1;
}

static int ranges_cut(ranges *rs, uint64_t a, uint64_t z)
{
    size_t n = rs->n;
    for (size_t i = 0; i < n; i++) {
        range x = rs->r[i];
        if (x.end <= a || x.start >= z)
            continue;
        /* keep the parts outside [a, z) */
        rs->r[i] = (range){x.start, x.start < a ? a : x.start};
        if (x.end > z && !ranges_add(rs, z, x.end))
            return 0;
    }
    size_t k = 0;
    for (size_t i = 0; i < rs->n; i++)
        if (rs->r[i].end > rs->r[i].start)
            rs->r[k++] = rs->r[i];
    rs->n = k;
    return 1;
}

od_status od_layout_at(const od_snapshot *s, int64_t device, size_t index, od_layout **out, od_error *err)
{
    *out = NULL;
    const od_device_trace *tr = NULL;
    for (size_t i = 0; i < s->n_traces; i++)
        if (s->traces[i].device == device)
            tr = &s->traces[i];
    if (!s->has_traces || !tr || index >= tr->n_entries)
        return od_fail(err, OD_ERR_ARG, "no trace entry %zu on device %lld", index, (long long)device);
    const od_trace_entry *e = tr->entries;
    size_t n = tr->n_entries;
    ranges rs = {0};
    od_u64map first = {0};   /* address -> 1 if its first event is an alloc, 2 if a free */
    od_u64map busy = {0};    /* address -> index into blocks */
    od_layout *l = calloc(1, sizeof *l);
    size_t cap_blocks = 0;
    if (!l)
        goto nomem;

    /* Segments: the final ones, with the segment events after `index` undone, newest first. */
    for (size_t i = 0; i < s->n_segments; i++)
        if (s->segments[i].device == device &&
            !ranges_add(&rs, s->segments[i].address, s->segments[i].address + s->segments[i].total_size))
            goto nomem;
    for (size_t i = n; i-- > index + 1;) {
        const od_trace_entry *x = &e[i];
        uint64_t z = x->addr + x->size < x->addr ? UINT64_MAX : x->addr + x->size;
        if (x->action == OD_ACT_SEGMENT_ALLOC || x->action == OD_ACT_SEGMENT_MAP) {
            if (!ranges_cut(&rs, x->addr, z))
                goto nomem;
        } else if (x->action == OD_ACT_SEGMENT_FREE || x->action == OD_ACT_SEGMENT_UNMAP) {
            if (!ranges_cut(&rs, x->addr, z) || !ranges_add(&rs, x->addr, z))
                goto nomem;
        }
    }
    if (rs.n)
        qsort(rs.r, rs.n, sizeof *rs.r, cmp_range);

    /* Busy blocks at the moment. */
#define PUT_BLOCK(addr_, size_, state_)                                                        \
    do {                                                                                       \
        uint32_t at_;                                                                          \
        if (od_u64map_get(&busy, (addr_), &at_)) {                                             \
            l->blocks[at_] = (od_layout_block){(addr_), (size_), (state_)};                    \
            break;                                                                             \
        }                                                                                      \
        if (!od_grow((void **)&l->blocks, &cap_blocks, l->n_blocks + 1, sizeof *l->blocks))   \
            goto nomem;                                                                        \
        l->blocks[l->n_blocks] = (od_layout_block){(addr_), (size_), (state_)};                \
        if (!od_u64map_put(&busy, (addr_), (uint32_t)l->n_blocks))                             \
            goto nomem;                                                                        \
        l->n_blocks++;                                                                         \
    } while (0)
    /* Each address's first alloc / free_completed, as (index << 1) | (1 if a free). */
    if (n > (size_t)(UINT32_MAX >> 1))
        return od_layout_free(l), od_fail(err, OD_ERR_LIMIT, "trace too long for a layout");
    for (size_t i = 0; i < n; i++) {
        uint32_t v;
        if ((e[i].action == OD_ACT_ALLOC || e[i].action == OD_ACT_FREE_COMPLETED) &&
            !od_u64map_get(&first, e[i].addr, &v) &&
            !od_u64map_put(&first, e[i].addr, (uint32_t)(i << 1) | (e[i].action == OD_ACT_FREE_COMPLETED)))
            goto nomem;
    }
    /* From before the trace: final blocks the trace never touched, and blocks whose first
     * event is a free after the moment. */
    for (size_t i = 0; i < s->n_segments; i++) {
        const od_segment *seg = &s->segments[i];
        if (seg->device != device)
            continue;
        for (size_t k = 0; k < seg->n_blocks; k++) {
            const od_block *b = &s->blocks[seg->first_block + k];
            uint32_t v;
            if ((b->state == OD_BLOCK_ACTIVE_ALLOCATED || b->state == OD_BLOCK_ACTIVE_PENDING_FREE) &&
                !od_u64map_get(&first, b->address, &v))
                PUT_BLOCK(b->address, b->size, OD_BLOCK_ACTIVE_ALLOCATED);
        }
    }
    for (size_t i = index + 1; i < n; i++) {
        uint32_t v;
        if (e[i].action == OD_ACT_FREE_COMPLETED && od_u64map_get(&first, e[i].addr, &v) &&
            v == ((uint32_t)(i << 1) | 1u))
            PUT_BLOCK(e[i].addr, od_round_request(e[i].size), OD_BLOCK_ACTIVE_ALLOCATED);
    }
    /* The trace up to the moment. */
    for (size_t i = 0; i <= index; i++) {
        const od_trace_entry *x = &e[i];
        uint32_t at;
        if (x->action == OD_ACT_ALLOC) {
            PUT_BLOCK(x->addr, od_round_request(x->size), OD_BLOCK_ACTIVE_ALLOCATED);
        } else if (x->action == OD_ACT_FREE_REQUESTED) {
            if (od_u64map_get(&busy, x->addr, &at))
                l->blocks[at].state = OD_BLOCK_ACTIVE_PENDING_FREE;
        } else if (x->action == OD_ACT_FREE_COMPLETED) {
            if (od_u64map_get(&busy, x->addr, &at)) {
                l->blocks[at].size = 0; /* dropped below */
                od_u64map_del(&busy, x->addr);
            }
        }
    }
#undef PUT_BLOCK
    size_t k = 0;
    for (size_t i = 0; i < l->n_blocks; i++)
        if (l->blocks[i].size)
            l->blocks[k++] = l->blocks[i];
    l->n_blocks = k;
    if (k)
        qsort(l->blocks, k, sizeof *l->blocks, cmp_lblock);

    /* Blocks into segments (both by address). */
    l->segments = calloc(rs.n ? rs.n : 1, sizeof *l->segments);
    od_layout_block *kept = malloc((k ? k : 1) * sizeof *kept);
    if (!l->segments || !kept) {
        free(kept);
        goto nomem;
    }
    size_t bi = 0, nk = 0;
    for (size_t i = 0; i < rs.n; i++) {
        od_layout_segment *sg = &l->segments[l->n_segments++];
        sg->address = rs.r[i].start;
        sg->size = rs.r[i].end - rs.r[i].start;
        l->reserved_bytes += sg->size;
        sg->first_block = nk;
        while (bi < k && l->blocks[bi].address < rs.r[i].start)
            l->orphans++, bi++;
        uint64_t pos = rs.r[i].start;
        while (bi < k && l->blocks[bi].address < rs.r[i].end) {
            od_layout_block b = l->blocks[bi++];
            if (b.address < pos) { /* overlaps the previous block: inconsistent, skip */
                l->orphans++;
                continue;
            }
            if (b.address + b.size > rs.r[i].end || b.address + b.size < b.address)
                b.size = rs.r[i].end - b.address; /* the rounding guess overran the segment */
            kept[nk++] = b;
            l->busy_bytes += b.size;
            pos = b.address + b.size;
        }
        sg->n_blocks = nk - sg->first_block;
    }
    l->orphans += k - bi;
    free(l->blocks);
    l->blocks = kept;
    l->n_blocks = nk;
    free(rs.r);
    od_u64map_free(&first);
    od_u64map_free(&busy);
    *out = l;
    return OD_OK;
nomem:
    free(rs.r);
    od_u64map_free(&first);
    od_u64map_free(&busy);
    od_layout_free(l);
    return od_fail(err, OD_ERR_NOMEM, "out of memory");
}
