/* timeline.c - memory over trace time, downsampled to a bounded number of points. */
#include "analyze/timeline.h"

#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "model/sites.h"

#define OTHER_SITES "other sites"

/* The first and last time of n entries (traces are time-ordered, but do not rely on it). */
static void time_span(const od_device_trace *e, size_t n, uint64_t *first, uint64_t *last)
{
    *first = od_trace_at(e, 0).time_us;
    *last = od_trace_at(e, n - 1).time_us;
    for (size_t i = 0; i < n; i++) {
        uint64_t time_us = od_trace_at(e, i).time_us;
        if (time_us < *first)
            *first = time_us;
        else if (time_us > *last)
            *last = time_us;
    }
}

/* Each stack's group (stack_group[stack]): the top site at the peak it names, else the
 * last group, "other sites" (k); and the groups of allocations without frames and of those
 * live before the trace began. */
static void group_stacks(const od_snapshot *s, const od_timeline *t, size_t k, uint32_t *stack_group,
                         uint32_t *no_frames_out, uint32_t *before_out)
{
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
    *no_frames_out = no_frames;
    *before_out = before;
}

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

od_status od_timeline_build(const od_snapshot *s, const od_device_summary *d, size_t max_points,
                            size_t top_groups, od_timeline **out, od_error *err)
{
    *out = NULL;
    const od_trace *tr = d->trace;
    if (!tr || !tr->has_trace || !tr->n_entries)
        return od_fail(err, OD_ERR_ARG, "device %lld has no trace entries", (long long)d->device);
    if (max_points < 2)
        return od_fail(err, OD_ERR_ARG, "a timeline needs at least 2 points");

    const od_device_trace *e = tr->entries;
    size_t n = tr->n_entries;
    od_timeline *t = calloc(1, sizeof *t);
    uint32_t *stack_group = NULL;
    uint64_t *cur_groups = NULL;
    if (!t)
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    t->device = d->device;
    time_span(e, n, &t->first_time_us, &t->last_time_us);

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
    uint32_t no_frames, before;
    group_stacks(s, t, k, stack_group, &no_frames, &before);
#define LIFE_GROUP(l_) (od_life_of(tr, (l_)).stack ? stack_group[od_life_of(tr, (l_)).stack] \
                        : (l_)->alloc_index == OD_TRACE_BEFORE ? before : no_frames)
    for (size_t i = 0; i < tr->n_lives; i++)
        if (tr->lives[i].alloc_index == OD_TRACE_BEFORE)
            cur_groups[LIFE_GROUP(&tr->lives[i])] += tr->lives[i].block_bytes;

    t->has_reserved = tr->has_reserved;
    size_t nb = tr->n_boundaries;
    if (nb) {
        t->iterations = calloc(nb, sizeof *t->iterations);
        if (!t->iterations)
            goto nomem;
        t->boundary_name = tr->boundary_marker;
    }

    od_trace_cursor c;
    od_trace_cursor_init(tr, &c);
    uint64_t span = t->last_time_us - t->first_time_us;
    size_t bucket = 0, bi = 0;
    uint64_t it_peak = c.live_block_bytes, it_peak_time = t->first_time_us;

    /* Point 0: the state before the first entry. */
    t->time_us[0] = t->first_time_us;
    t->live_bytes[0] = c.live_block_bytes;
    t->reserved_bytes[0] = c.reserved_bytes;
    memcpy(t->group_bytes, cur_groups, t->n_groups * sizeof *cur_groups);
    t->n_points = 1;
    t->peak_reserved_bytes = c.reserved_bytes;
    int open = 0; /* a point for the current bucket is being collected (index n_points) */

    for (size_t i = 0; i < n; i++) {
        od_trace_entry x_v = od_trace_at(e, i);
        const od_trace_entry *x = &x_v;
        while (bi < nb && tr->boundaries[bi] <= i) {
            t->iterations[bi] = (od_timeline_iteration){x->time_us, c.live_block_bytes, it_peak, it_peak_time};
            it_peak = c.live_block_bytes;
            it_peak_time = x->time_us;
            bi++;
        }
        od_trace_cursor_step(tr, &c, i);
        uint32_t li = tr->entry_life[i];
        if (li != UINT32_MAX) {
            const od_lifetime *l = &tr->lives[li];
            uint32_t g = LIFE_GROUP(l);
            if (x->action == OD_ACT_ALLOC)
                cur_groups[g] += l->block_bytes;
            else if (x->action == OD_ACT_FREE_COMPLETED && l->free_index == i)
                cur_groups[g] -= l->block_bytes < cur_groups[g] ? l->block_bytes : cur_groups[g];
        }
        uint64_t cur = c.live_block_bytes, res = c.reserved_bytes;
        if (res > t->peak_reserved_bytes)
            t->peak_reserved_bytes = res;
        if (cur > it_peak) {
            it_peak = cur;
            it_peak_time = x->time_us;
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
        /* The peak entry always makes its bucket's point, so the plot shows the peak. */
        if (!open || cur > t->live_bytes[p] || (tr->has_peak && i == tr->peak_index)) {
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
#undef LIFE_GROUP
    if (open)
        t->n_points++;
    for (; bi < nb; bi++) {
        t->iterations[bi] = (od_timeline_iteration){t->last_time_us, c.live_block_bytes, it_peak, it_peak_time};
        it_peak = c.live_block_bytes;
        it_peak_time = t->last_time_us;
    }
    t->n_iterations = nb;
    t->peak_live_bytes = tr->peak_block_bytes;
    t->peak_time_us = tr->has_peak ? tr->peak_time_us : t->first_time_us;
    t->has_peak = tr->has_peak;

    free(stack_group);
    free(cur_groups);
    *out = t;
    return OD_OK;
nomem:
    free(stack_group);
    free(cur_groups);
    od_timeline_free(t);
    return od_fail(err, OD_ERR_NOMEM, "out of memory");
}

/* ---------- layout at one moment ---------- */

void od_layout_free_space(const od_layout *l, uint64_t *stranded, uint64_t *largest)
{
    *stranded = *largest = 0;
    for (size_t i = 0; i < l->n_segments; i++) {
        const od_layout_segment *g = &l->segments[i];
        uint64_t at = g->address, end = g->address + g->size, free_bytes = 0;
        for (size_t k = 0; k <= g->n_blocks; k++) {
            const od_layout_block *b = k < g->n_blocks ? &l->blocks[g->first_block + k] : NULL;
            uint64_t to = b ? (b->address < end ? b->address : end) : end;
            if (to > at) {
                free_bytes += to - at;
                if (to - at > *largest)
                    *largest = to - at;
            }
            if (b && b->address + b->size > at)
                at = b->address + b->size;
        }
        if (g->n_blocks)
            *stranded += free_bytes;
    }
}

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

od_status od_layout_at(const od_trace *t, size_t index, od_layout **out, od_error *err)
{
    *out = NULL;
    if (!t->has_trace || index >= t->n_entries)
        return od_fail(err, OD_ERR_ARG, "no trace entry %zu on device %lld", index, (long long)t->device);
    const od_snapshot *s = t->snap;
    const od_device_trace *e = t->entries;
    size_t n = t->n_entries;
    ranges rs = {0};
    od_layout *l = calloc(1, sizeof *l);
    size_t cap_blocks = 0;
    if (!l)
        goto nomem;

    /* Segments: the final ones, with the segment events after `index` undone, newest first. */
    for (size_t i = 0; i < s->n_segments; i++)
        if (s->segments[i].device == t->device &&
            !ranges_add(&rs, s->segments[i].address, s->segments[i].address + s->segments[i].total_size))
            goto nomem;
    for (size_t i = n; i-- > index + 1;) {
        od_trace_entry x_v = od_trace_at(e, i);
        const od_trace_entry *x = &x_v;
        uint64_t z = x->addr + x->size < x->addr ? UINT64_MAX : x->addr + x->size;
        if (x->action == OD_ACT_SEGMENT_ALLOC || x->action == OD_ACT_SEGMENT_MAP) {
            if (!ranges_cut(&rs, x->addr, z))
                goto nomem;
        } else if (x->action == OD_ACT_SEGMENT_FREE || x->action == OD_ACT_SEGMENT_UNMAP) {
            if (!ranges_cut(&rs, x->addr, z) || !ranges_add(&rs, x->addr, z))
                goto nomem;
        }
    }
    od_sort(rs.r, rs.n, sizeof *rs.r, cmp_range);

    /* Busy blocks at the moment: the lifetimes live then. */
    for (size_t i = 0; i < t->n_lives; i++) {
        const od_lifetime *lf = &t->lives[i];
        if (!od_trace_live_after(lf, index))
            continue;
        if (!od_grow((void **)&l->blocks, &cap_blocks, l->n_blocks + 1, sizeof *l->blocks))
            goto nomem;
        int pending = lf->free_req_index != OD_TRACE_NEVER && lf->free_req_index <= index;
        l->blocks[l->n_blocks++] = (od_layout_block){od_life_of(t, lf).addr, lf->block_bytes,
                                                     pending ? OD_BLOCK_ACTIVE_PENDING_FREE : OD_BLOCK_ACTIVE_ALLOCATED};
    }
    size_t k = 0;
    for (size_t i = 0; i < l->n_blocks; i++)
        if (l->blocks[i].size)
            l->blocks[k++] = l->blocks[i];
    l->n_blocks = k;
    od_sort(l->blocks, k, sizeof *l->blocks, cmp_lblock);

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
    *out = l;
    return OD_OK;
nomem:
    free(rs.r);
    od_layout_free(l);
    return od_fail(err, OD_ERR_NOMEM, "out of memory");
}
