/* diagnose.c - one diagnosis from every input: the verdict, its evidence, ranked
 * remedies and the command that verifies the fix. */
#include "analyze/diagnose.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/advice.h"
#include "analyze/timeline.h"
#include "base/mem.h"
#include "base/torchver.h"
#include "base/units.h"
#include "model/sites.h"

#define MAX_EVIDENCE 48
#define MAX_REMEDIES 8
#define MiB (1024.0 * 1024.0)

static const char *const verdict_names[OD_VERDICT_COUNT] = {
    "healthy", "unknown", "capacity", "fragmentation", "other_processes", "cap_limit", "leak", "host_memory",
};

const char *od_verdict_name(od_verdict v)
{
    return v < OD_VERDICT_COUNT ? verdict_names[v] : "?";
}

int od_verdict_parse(const char *name)
{
    for (int v = 0; v < OD_VERDICT_COUNT; v++)
        if (name && strcmp(name, verdict_names[v]) == 0)
            return v;
    return -1;
}

const char *od_oom_request_note(const od_oom_report *r)
{
    if (!r->request_is_segment)
        return NULL;
    if (r->requested_bytes == 2ULL << 20 || r->requested_bytes == 20ULL << 20)
        return "the allocator's segment size: the tensor may be much smaller (requests up to 1 MiB "
               "take a 2 MiB segment, up to 10 MiB a 20 MiB one)";
    return "the allocator's block size (the request rounded up), not the tensor's exact size";
}

void od_oom_reason(const od_oom_report *r, char *buf, size_t size)
{
    char a[32], b[32], c[32], d[32], e[32], f[32];
    uint64_t ru = (r->have & OD_HAVE_RESERVED_UNALLOC) ? r->reserved_unallocated_bytes : 0;
    const char *lim = (r->have & OD_HAVE_ALLOWED) ? "the cap" : "capacity";
    if (od_triage_reason(r, buf, size))
        return;
    switch (r->verdict) {
    case OD_OOM_HOST_MEMORY:
        snprintf(buf, size, "host RAM, the OOM killer or shared memory ran out, not GPU memory");
        return;
    case OD_OOM_UNKNOWN:
        if (!(r->have & OD_HAVE_REQUESTED))
            snprintf(buf, size, "the message does not say how much was requested");
        else
            snprintf(buf, size, "the message gives no pool figures (%s), so the cause cannot be told from it",
                     !(r->have & OD_HAVE_ALLOCATED) ? "allocated memory" : "capacity or cap");
        return;
    case OD_OOM_FRAGMENTATION:
        snprintf(buf, size,
                 "%s requested <= %s reserved-unallocated + %s headroom under %s = %s: the memory "
                 "existed, but no free block was large enough",
                 od_format_iec(r->requested_bytes, a, sizeof a), od_format_iec(ru, b, sizeof b),
                 od_format_iec(r->headroom_bytes, c, sizeof c), lim,
                 od_format_iec(r->available_bytes, d, sizeof d));
        return;
    case OD_OOM_CAP_LIMIT:
        if (r->framework == OD_FW_PYTORCH_MPS)
            snprintf(buf, size,
                     "the MPS high-watermark cap (max allowed %s) was reached: %s requested, only %s "
                     "left under it",
                     od_format_iec(r->allowed_bytes, a, sizeof a), od_format_iec(r->requested_bytes, b, sizeof b),
                     od_format_iec(r->available_bytes, c, sizeof c));
        else if (r->have & OD_HAVE_FREE)
            snprintf(buf, size,
                     "the per-process cap (%s allowed) was reached: %s requested, %s available under "
                     "the cap, while the device still had %s free",
                     od_format_iec(r->allowed_bytes, a, sizeof a), od_format_iec(r->requested_bytes, b, sizeof b),
                     od_format_iec(r->available_bytes, c, sizeof c), od_format_iec(r->free_bytes, d, sizeof d));
        else
            snprintf(buf, size, "the per-process cap (%s allowed) was reached: %s requested, %s available under it",
                     od_format_iec(r->allowed_bytes, a, sizeof a), od_format_iec(r->requested_bytes, b, sizeof b),
                     od_format_iec(r->available_bytes, c, sizeof c));
        return;
    case OD_OOM_OTHER_PROCESSES:
        snprintf(buf, size,
                 "%s requested > %s available (%s reserved-unallocated + %s headroom): %s missing, and "
                 "other processes hold %s",
                 od_format_iec(r->requested_bytes, a, sizeof a), od_format_iec(r->available_bytes, b, sizeof b),
                 od_format_iec(ru, c, sizeof c), od_format_iec(r->headroom_bytes, d, sizeof d),
                 od_format_iec(r->missing_bytes, e, sizeof e),
                 od_format_iec(r->others_bytes, f, sizeof f));
        return;
    case OD_OOM_CAPACITY: {
        char o[64] = "no other process is reported";
        if (r->n_other)
            snprintf(o, sizeof o, "other processes hold only %s", od_format_iec(r->others_bytes, e, sizeof e));
        char m[32];
        snprintf(buf, size,
                 "%s requested > %s available (%s reserved-unallocated + %s headroom under %s): %s "
                 "missing; %s",
                 od_format_iec(r->requested_bytes, a, sizeof a), od_format_iec(r->available_bytes, b, sizeof b),
                 od_format_iec(ru, c, sizeof c), od_format_iec(r->headroom_bytes, d, sizeof d), lim,
                 od_format_iec(r->missing_bytes, m, sizeof m), o);
        return;
    }
    }
    snprintf(buf, size, "?");
}

/* ---------- building ---------- */

static void evid(od_diagnosis *d, size_t input, const char *key, double value, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static void evid(od_diagnosis *d, size_t input, const char *key, double value, const char *fmt, ...)
{
    if (d->n_evidence >= MAX_EVIDENCE)
        return;
    od_evidence *e = &d->evidence[d->n_evidence++];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->text, sizeof e->text, fmt, ap);
    va_end(ap);
    e->input = input;
    e->key = key;
    e->value = value;
}

static const char *iec(uint64_t v, char *buf, size_t size)
{
    return od_format_iec(v, buf, size);
}

static uint64_t clamp_u64(double v)
{
    if (!(v > 0))
        return 0;
    return v >= 9e18 ? (uint64_t)9e18 : (uint64_t)llround(v);
}

static od_verdict from_oom(od_oom_verdict v)
{
    switch (v) {
    case OD_OOM_FRAGMENTATION: return OD_VERDICT_FRAGMENTATION;
    case OD_OOM_CAP_LIMIT: return OD_VERDICT_CAP_LIMIT;
    case OD_OOM_OTHER_PROCESSES: return OD_VERDICT_OTHER_PROCESSES;
    case OD_OOM_CAPACITY: return OD_VERDICT_CAPACITY;
    case OD_OOM_UNKNOWN: return OD_VERDICT_UNKNOWN;
    case OD_OOM_HOST_MEMORY: return OD_VERDICT_HOST_MEMORY;
    }
    return OD_VERDICT_UNKNOWN;
}

/* ---------- snapshots ---------- */

/* The pool when the last OOM of the trace happened: live block bytes and reserved bytes
 * (trace.h) just before it, and the highest reserve until then. */
static void oom_state(od_snapshot_findings *f)
{
    const od_trace *t = f->figures->trace;
    const od_device_summary *ds = f->figures;
    if (!t || !t->has_trace || !ds->n_ooms)
        return;
    size_t at = ds->ooms[ds->n_ooms - 1].index;
    if (at >= t->n_entries)
        return;
    od_trace_cursor c;
    od_trace_cursor_init(t, &c);
    uint64_t max_res = c.reserved_bytes;
    for (size_t i = 0; i < at; i++) {
        od_trace_cursor_step(t, &c, i);
        if (c.reserved_bytes > max_res)
            max_res = c.reserved_bytes;
    }
    f->have_oom = 1;
    od_trace_entry oom = od_trace_at(t->entries, at);
    f->oom_request_bytes = oom.size;
    f->oom_device_free_bytes = oom.device_free;
    f->oom_allocated_bytes = c.live_block_bytes;
    f->oom_reserved_bytes = c.reserved_bytes;
    f->max_reserved_bytes = max_res;
}

static void stack_site_name(const od_snapshot *s, uint32_t stack, char *buf, size_t size)
{
    int64_t sf, wf;
    od_stack_site(s, stack, &sf, &wf);
    od_frame_format(s, sf, buf, size);
}

/* The innermost frame outside torch (sites.h's "where"): the model line that allocated. */
static void stack_where_name(const od_snapshot *s, uint32_t stack, char *buf, size_t size)
{
    int64_t sf, wf;
    od_stack_site(s, stack, &sf, &wf);
    od_frame_format(s, wf, buf, size);
}

/* What held the memory when the last OOM happened: the two lines (innermost frames outside
 * torch) holding the most block bytes then, beside the failing request's own line. */
static void held_at_oom(od_snapshot_findings *f)
{
    const od_trace *t = f->figures->trace;
    const od_snapshot *s = t->snap;
    const od_device_summary *ds = f->figures;
    if (!f->have_oom)
        return;
    size_t at = ds->ooms[ds->n_ooms - 1].index;
    snprintf(f->oom_site, sizeof f->oom_site, "%s", ds->ooms[ds->n_ooms - 1].where);
    uint64_t *per = calloc(s->n_stacks + 1, sizeof *per); /* slot n_stacks: no frames */
    od_named_bytes *rows = NULL;
    if (!per)
        return;
    for (size_t i = 0; i < t->n_lives; i++) {
        const od_lifetime *l = &t->lives[i];
        if (at && od_trace_live_after(l, at - 1))
            per[od_life_of(t, l).stack ? od_life_of(t, l).stack : s->n_stacks] += l->block_bytes;
    }
    size_t n = 0;
    rows = malloc((s->n_stacks + 1) * sizeof *rows);
    if (!rows) {
        free(per);
        return;
    }
    for (size_t k = 0; k <= s->n_stacks; k++) {
        if (!per[k])
            continue;
        if (k == s->n_stacks)
            snprintf(rows[n].name, sizeof rows[n].name, "%s", OD_SITE_NO_FRAMES);
        else
            stack_where_name(s, (uint32_t)k, rows[n].name, sizeof rows[n].name);
        rows[n++].bytes = per[k];
    }
    size_t top = od_named_bytes_top(rows, n, 2);
    for (size_t r = 0; r < top; r++) {
        snprintf(f->held_site[r], sizeof f->held_site[r], "%s", rows[r].name);
        f->held_bytes[r] = rows[r].bytes;
    }
    free(rows);
    free(per);
}

/* CUDA-graph pools and side-stream caches, from the device's segments. */
static od_status pools_findings(const od_snapshot *s, od_snapshot_findings *f, od_error *err)
{
    od_pools *p = NULL;
    od_status rc = od_pools_compute(s, &p, err);
    if (rc != OD_OK)
        return rc;
    const od_device_pools *dp = od_pools_device(p, f->device);
    for (size_t i = 0; dp && i < dp->n_pools; i++) {
        const od_pool_usage *u = &dp->pools[i];
        if (u->kind != OD_POOL_GRAPH)
            continue;
        if (!f->graph_pools || u->reserved_bytes > f->graph_pool_reserved_bytes) {
            f->graph_pool_id[0] = u->pool_id[0];
            f->graph_pool_id[1] = u->pool_id[1];
        }
        f->graph_pools++;
        f->graph_pool_segments += u->segments;
        f->graph_pool_reserved_bytes += u->reserved_bytes;
        f->graph_pool_allocated_bytes += u->allocated_bytes;
    }
    f->streams = dp ? dp->n_streams : 0;
    for (size_t i = 0; dp && i < dp->n_streams; i++)
        if (dp->streams[i].stream != 0 && dp->streams[i].free_bytes > f->side_stream_free_bytes) {
            f->side_stream = dp->streams[i].stream;
            f->side_stream_free_bytes = dp->streams[i].free_bytes;
        }
    od_pools_free(p);
    /* what of the side stream's free bytes lies in graph pools (empty_cache() cannot free it) */
    for (size_t g = 0; f->side_stream_free_bytes && g < s->n_segments; g++) {
        const od_segment *sg = &s->segments[g];
        if (sg->device != f->device || sg->stream != f->side_stream ||
            od_pool_kind_of(sg->pool_id[0], sg->pool_id[1]) != OD_POOL_GRAPH)
            continue;
        for (size_t k = 0; k < sg->n_blocks; k++) {
            const od_block *bl = &s->blocks[sg->first_block + k];
            if (bl->state == OD_BLOCK_INACTIVE)
                f->side_stream_graph_free_bytes += bl->size;
        }
    }
    return OD_OK;
}

static int cmp_u64v(const void *pa, const void *pb)
{
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    return a < b ? -1 : a > b;
}

/* A spike: one iteration (not the first, which creates the optimizer state, nor the
 * last, cut by the snapshot) peaking 25% and 64 MiB above the median of the others. Its
 * cause is named by the sites whose largest allocation grew in it against every other
 * iteration: a longer sequence or a larger batch scales the sizes. */
static void find_spike(od_snapshot_findings *f)
{
    const od_iterations *it = f->iterations;
    if (!it || it->n < 5)
        return;
    size_t lo = 1, hi = it->n - 2, n = hi - lo + 1;
    uint64_t *v = malloc(n * sizeof *v);
    if (!v)
        return;
    size_t top = lo;
    for (size_t k = lo; k <= hi; k++) {
        v[k - lo] = it->items[k].peak_bytes;
        if (it->items[k].peak_bytes > it->items[top].peak_bytes)
            top = k;
    }
    od_sort(v, n, sizeof *v, cmp_u64v);
    uint64_t med = v[n / 2];
    free(v);
    uint64_t x = it->items[top].peak_bytes;
    if (!(x > med + med / 4 && x - med >= 64 * (uint64_t)MiB))
        return;
    f->have_spike = 1;
    f->spike_iteration = top;
    f->spike_peak_bytes = x;
    f->typical_peak_bytes = med;
    /* Largest allocation per stack inside the spike and elsewhere. */
    const od_trace *t = f->figures->trace;
    const od_snapshot *s = t->snap;
    uint64_t *in = calloc(s->n_stacks + 1, sizeof *in), *out = calloc(s->n_stacks + 1, sizeof *out);
    if (!in || !out) {
        free(in);
        free(out);
        return;
    }
    size_t a = it->items[top].entry, z = it->items[top + 1].entry;
    for (size_t i = it->items[lo].entry; i < it->items[hi + 1].entry; i++) {
        if (od_trace_action(t->entries, i) != OD_ACT_ALLOC)
            continue;
        od_trace_entry ee = od_trace_at(t->entries, i);
        const od_trace_entry *e = &ee;
        if (!e->stack)
            continue;
        uint64_t *m = i >= a && i < z ? in : out;
        if (e->size > m[e->stack])
            m[e->stack] = e->size;
    }
    size_t o = 0;
    for (int r = 0; r < 3; r++) {
        size_t best = 0;
        double best_ratio = 1.2;
        for (size_t k = 1; k < s->n_stacks; k++)
            if (in[k] >= MiB && out[k] && (double)in[k] / (double)out[k] > best_ratio) {
                best_ratio = (double)in[k] / (double)out[k];
                best = k;
            }
        if (!best)
            break;
        char site[256], b1[32], b2[32];
        stack_site_name(s, (uint32_t)best, site, sizeof site);
        if (o < sizeof f->spike_sites - 1)
            o += (size_t)snprintf(f->spike_sites + o, sizeof f->spike_sites - o, "%s%s (%s -> %s)", o ? "; " : "",
                                  site, iec(out[best], b1, sizeof b1), iec(in[best], b2, sizeof b2));
        in[best] = 0;
    }
    free(in);
    free(out);
}

/* The run's cap for a snapshot's device: the caller's (--capacity, --fraction), else the
 * "allowed" figure of an OOM message for that device (the last one); 0 when neither. */
static uint64_t known_cap(const od_diag_input *ins, size_t n, const od_diag_options *opts, int64_t device,
                          const char **source)
{
    *source = NULL;
    if (opts && opts->cap_bytes) {
        *source = "as given";
        return opts->cap_bytes;
    }
    for (size_t i = n; i-- > 0;) {
        const od_triage *t = ins[i].kind == OD_INPUT_LOG ? ins[i].triage : NULL;
        for (size_t k = t ? t->n_reports : 0; k-- > 0;) {
            const od_oom_report *r = &t->reports[k];
            if ((r->have & OD_HAVE_ALLOWED) && r->allowed_bytes && (!(r->have & OD_HAVE_DEVICE) || r->device == device)) {
                *source = "the OOM message";
                return r->allowed_bytes;
            }
        }
    }
    return 0;
}

/* The verdict of one snapshot by itself, under the run's cap when it is known (the same
 * arithmetic as an OOM message's: the memory existed when the request fits in the cap less
 * what was live). Without a known cap, a device with room shows a cap was reached; whether
 * it was fragmentation depends on the cap, and frag_cap_bytes / low_cap_bytes say how. */
static od_verdict snapshot_verdict(od_snapshot_findings *f)
{
    if (od_iterations_leak(f->iterations))
        return OD_VERDICT_LEAK;
    if (!f->have_oom)
        return OD_VERDICT_HEALTHY;
    uint64_t s = f->oom_request_bytes, a = f->oom_allocated_bytes;
    /* The pool (or, earlier, the process) held enough memory: it was not contiguous. */
    if (s <= (f->oom_reserved_bytes > a ? f->oom_reserved_bytes - a : 0) ||
        s <= (f->max_reserved_bytes > a ? f->max_reserved_bytes - a : 0))
        return OD_VERDICT_FRAGMENTATION;
    if (f->cap_bytes && s <= (f->cap_bytes > a ? f->cap_bytes - a : 0))
        return OD_VERDICT_FRAGMENTATION; /* the cap left room for it, in pieces */
    /* The device had the memory: something capped this process. */
    if (f->oom_device_free_bytes >= s) {
        if (!f->cap_bytes) {
            f->frag_cap_bytes = a + s;
            f->low_cap_bytes = f->max_reserved_bytes;
        }
        return OD_VERDICT_CAP_LIMIT;
    }
    return OD_VERDICT_CAPACITY;
}

/* Replay the trace under the run's setting and a few others, with the cap the run had:
 * the OOM message's "allowed" figure when a log says it, else the most the process ever
 * reserved (the cap was at least that). The run's own setting must fail where the run
 * failed, or the model (or the cap guess) does not describe the run and nothing counts. */
static od_status run_whatifs(const od_snapshot *s, od_snapshot_findings *f, const od_diag_input *ins, size_t n,
                             const od_diag_options *opts, od_error *err)
{
    static const char *const settings[] = {
        "expandable_segments:True",
        "max_split_size_mb:128",
        "garbage_collection_threshold:0.8",
        "expandable_segments:True,garbage_collection_threshold:0.8",
    };
    if (!f->have_oom || (f->verdict != OD_VERDICT_FRAGMENTATION && f->verdict != OD_VERDICT_CAP_LIMIT))
        return OD_OK;
    /* the run's cap; without one, the fragmentation branch's lowest cap (the settings are
     * what would serve it there), else the most ever reserved (a lower bound) */
    uint64_t cap = f->cap_bytes;
    f->whatif_cap_source = f->cap_source;
    if (!cap && f->frag_cap_bytes) {
        cap = f->frag_cap_bytes;
        f->whatif_cap_source = "the lowest under which it is fragmentation: live + the request";
    }
    if (!cap) {
        cap = f->max_reserved_bytes;
        f->whatif_cap_source = "the most ever reserved, a lower bound";
    }
    if (!cap)
        return OD_OK;
    f->whatif_cap_bytes = cap;
    od_replay_opts base;
    memset(&base, 0, sizeof base);
    od_replay_config_from_snapshot(s, &base.cfg);
    base.cfg.allowed_bytes = cap;
    base.device = f->device;
    size_t recorded = f->figures->ooms[f->figures->n_ooms - 1].index;
    od_replay_result *res = malloc(sizeof *res);
    if (!res)
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    od_alloc_conf tried_conf[sizeof settings / sizeof settings[0]];
    int tried_ok[sizeof settings / sizeof settings[0]] = {0};
    for (size_t k = 0; k <= sizeof settings / sizeof settings[0] && k < OD_MAX_WHATIFS; k++) {
        od_replay_opts o = base;
        if (k > 0) {
            od_error e2;
            if (od_allocsim_config_parse(&o.cfg, settings[k - 1], &e2) != OD_OK)
                continue;
            /* a setting the run already had (or one that changes nothing of it, or the same as
             * one replayed already) is no what-if */
            int seen = memcmp(&o.cfg.conf, &base.cfg.conf, sizeof o.cfg.conf) == 0;
            for (size_t j = 0; j + 1 < k && !seen; j++)
                seen = tried_ok[j] && memcmp(&o.cfg.conf, &tried_conf[j], sizeof o.cfg.conf) == 0;
            tried_conf[k - 1] = o.cfg.conf;
            tried_ok[k - 1] = 1;
            if (seen)
                continue;
        }
        od_error e3;
        od_status st = od_replay_snapshot(s, &o, res, &e3);
        if (st == OD_ERR_NOMEM) {
            free(res);
            return od_fail(err, OD_ERR_NOMEM, "out of memory");
        }
        if (st != OD_OK)
            break;
        if (k > 0 && !res->answerable) {
            f->whatif_unanswerable = 1; /* a wrapped trace: its starting state is the old policy's */
            break;
        }
        od_whatif *w = &f->whatifs[f->n_whatifs++];
        w->approximate = res->approximate;
        snprintf(w->setting, sizeof w->setting, "%s", k ? settings[k - 1] : "");
        w->oom = res->oom.happened;
        w->oom_entry = res->oom.event_index;
        w->oom_request_bytes = res->oom.size_bytes;
        w->oom_allocated_bytes = res->oom.allocated_bytes;
        w->oom_largest_free_bytes = res->oom.largest_free_bytes;
        w->peak_reserved_bytes = res->stats.peak_reserved_bytes;
        w->stranded_at_peak_bytes = res->stats.stranded_at_peak_bytes;
        if (k == 0) {
            f->whatif_reproduces = w->oom && w->oom_entry == recorded;
            if (!f->whatif_reproduces)
                break;
        }
    }
    free(res);
    return OD_OK;
}

static const char *short_name(const char *path)
{
    const char *p = strrchr(path, '/');
    return p ? p + 1 : path;
}

/* Stranded bytes and the largest free block just before the recorded OOM (the layout the
 * failing request met; returns 1), or the final segments' when the trace cannot rebuild
 * it (returns 0). */
static int free_space_at_oom(const od_snapshot_findings *f, uint64_t *stranded, uint64_t *largest)
{
    const od_device_summary *ds = f->figures;
    const od_trace *t = ds->trace;
    *stranded = ds->stranded_bytes;
    *largest = ds->largest_free_block_bytes;
    size_t at = ds->n_ooms ? ds->ooms[ds->n_ooms - 1].index : 0;
    od_layout *l = NULL;
    if (!t || !t->has_trace || !at || od_layout_at(t, at - 1, &l, NULL) != OD_OK)
        return 0;
    od_layout_free_space(l, stranded, largest);
    od_layout_free(l);
    return 1;
}

/* The OOM itself: what failed where, what held the memory, why, and the replays. */
static void evidence_oom(od_diagnosis *d, const od_diag_input *in, size_t idx, const od_snapshot_findings *f)
{
    char a[32], b[32], c[32], e[32], g[32];
    const od_device_summary *ds = f->figures;
    if (f->have_oom) {
        const od_oom_event *o = &ds->ooms[ds->n_ooms - 1];
        uint64_t s = f->oom_request_bytes, al = f->oom_allocated_bytes;
        evid(d, idx, "oom_request_bytes", (double)s,
             "%s: OOM at entry %zu: %s requested at %s, with %s live and %s reserved (at most %s earlier); the "
             "device had %s free",
             in->name, o->index, iec(s, a, sizeof a), o->site, iec(al, b, sizeof b),
             iec(f->oom_reserved_bytes, c, sizeof c), iec(f->max_reserved_bytes, e, sizeof e),
             iec(f->oom_device_free_bytes, g, sizeof g));
        /* The stack trace misleads: the failing line is rarely what holds the memory. */
        if (f->held_bytes[0] && strcmp(f->held_site[0], f->oom_site) != 0)
            evid(d, idx, "held_bytes", (double)(f->held_bytes[0] + f->held_bytes[1]),
                 "%s: the failing line is %s (%s); %s is held by %s%s%s%s",
                 in->name, f->oom_site, iec(s, a, sizeof a), iec(f->held_bytes[0] + f->held_bytes[1], b, sizeof b),
                 f->held_site[0], f->held_bytes[1] ? " and " : "", f->held_bytes[1] ? f->held_site[1] : "",
                 f->held_bytes[1] ? "" : "");
        uint64_t stranded, largest;
        char when[48] = " at the end";
        if (free_space_at_oom(f, &stranded, &largest))
            snprintf(when, sizeof when, " just before entry %zu", o->index);
        switch (f->verdict) {
        case OD_VERDICT_FRAGMENTATION:
            if (s <= (f->oom_reserved_bytes > al ? f->oom_reserved_bytes - al : 0) ||
                s <= (f->max_reserved_bytes > al ? f->max_reserved_bytes - al : 0))
                evid(d, idx, "largest_free_block_bytes", (double)largest,
                     "%s: the request fit in what the pool held (%s reserved - %s live) or had held (%s), but the "
                     "largest free block%s was %s: fragmentation",
                     in->name, iec(f->oom_reserved_bytes, a, sizeof a), iec(al, b, sizeof b),
                     iec(f->max_reserved_bytes, c, sizeof c), when, iec(largest, e, sizeof e));
            else
                evid(d, idx, "largest_free_block_bytes", (double)largest,
                     "%s: the request fit under the cap (%s, %s) with the %s live, but the pool could not grow by a "
                     "segment for it and the largest free block%s was %s: fragmentation",
                     in->name, iec(f->cap_bytes, a, sizeof a), f->cap_source, iec(al, b, sizeof b), when,
                     iec(largest, e, sizeof e));
            break;
        case OD_VERDICT_CAP_LIMIT:
            evid(d, idx, NULL, 0,
                 "%s: the device had %s free but the pool could not grow by %s: a per-process cap "
                 "(set_per_process_memory_fraction) was reached at about %s reserved, with %s stranded and a "
                 "largest free block of %s%s",
                 in->name, iec(f->oom_device_free_bytes, a, sizeof a), iec(s, b, sizeof b),
                 iec(f->oom_reserved_bytes, c, sizeof c), iec(stranded, e, sizeof e), iec(largest, g, sizeof g), when);
            if (f->frag_cap_bytes)
                evid(d, idx, "fragmentation_cap_bytes", (double)f->frag_cap_bytes,
                     "%s: the cap is not known (give --capacity, --fraction or the OOM message): it was at least %s "
                     "(the most reserved); under a cap of %s or more the %s live and the request fit, so the OOM "
                     "was fragmentation; under a smaller one the cap was too small for the step",
                     in->name, iec(f->low_cap_bytes, a, sizeof a), iec(f->frag_cap_bytes, b, sizeof b),
                     iec(al, c, sizeof c));
            break;
        case OD_VERDICT_CAPACITY:
            evid(d, idx, NULL, 0, "%s: the device had only %s free for a %s request: the work does not fit",
                 in->name, iec(f->oom_device_free_bytes, a, sizeof a), iec(s, b, sizeof b));
            break;
        default:
            break;
        }
    }
    if (f->need.have) {
        const od_step_need *sn = &f->need;
        evid(d, idx, "forward_need_bytes", (double)sn->forward_bytes,
             "%s: the trace ends in its first forward, %.2f of the model's %zu layers done (its layers are built "
             "alike and run alike): %s kept per layer, so the forward needs about %s through its last layer, before "
             "the logits, the loss and backward",
             in->name, sn->layers_done, sn->layers_total, iec(sn->per_layer_bytes, a, sizeof a),
             iec(sn->forward_bytes, b, sizeof b));
    }
    if (f->whatif_unanswerable)
        evid(d, idx, NULL, 0,
             "%s: the trace starts mid-run (the ring buffer wrapped): what another allocator setting would have done "
             "cannot be answered from it, since the blocks live at its start were placed under the run's own setting",
             in->name);
    if (f->n_whatifs) {
        if (!f->whatif_reproduces) {
            evid(d, idx, NULL, 0,
                 "%s: replayed under a cap of %s (%s), the run's own allocator setting does not fail where the run "
                 "did: no what-if is measured",
                 in->name, iec(f->whatif_cap_bytes, a, sizeof a), f->whatif_cap_source);
        } else {
            evid(d, idx, "whatif_cap_bytes", (double)f->whatif_cap_bytes,
                 "%s: replayed under a cap of %s (%s), the run's setting fails at entry %zu as recorded, so the "
                 "allocator settings below were measured on it",
                 in->name, iec(f->whatif_cap_bytes, a, sizeof a), f->whatif_cap_source, f->whatifs[0].oom_entry);
        }
    }
}

/* What the snapshot holds: figures, the peak, iterations, purposes, pools, spikes. */
static void evidence_contents(od_diagnosis *d, const od_diag_input *in, size_t idx, const od_snapshot_findings *f)
{
    char a[32], b[32], c[32], e[32];
    const od_device_summary *ds = f->figures;
    evid(d, idx, "stranded_bytes", (double)ds->stranded_bytes,
         "%s: device %lld: %s reserved in %llu segments, %s allocated; %s stranded (free inside segments "
         "in use), largest free block %s",
         in->name, (long long)f->device, iec(ds->reserved_bytes, a, sizeof a), (unsigned long long)ds->segments,
         iec(ds->allocated_bytes, b, sizeof b), iec(ds->stranded_bytes, c, sizeof c),
         iec(ds->largest_free_block_bytes, e, sizeof e));
    const od_trace *tr = ds->trace;
    if (tr && tr->has_trace && tr->n_entries)
        evid(d, idx, "peak_allocated_bytes", (double)tr->peak_block_bytes,
             "%s: peak %s allocated (block bytes, what max_memory_allocated() reports%s) at entry %zu (+%.3f s), "
             "%s requested then",
             in->name, iec(tr->peak_block_bytes, a, sizeof a),
             tr->blocks_from_replay ? ", from the allocator replay, which reproduces the run"
                                    : "; requests rounded to 512 B where the replay cannot tell",
             tr->peak_index, (double)(tr->peak_time_us - ds->first_time_us) / 1e6,
             iec(tr->peak_requested_at_peak, b, sizeof b));
    const od_iterations *it = f->iterations;
    if (it && it->source != OD_ITER_NONE && it->n) {
        char from[700];
        if (it->source == OD_ITER_ANNOTATIONS)
            snprintf(from, sizeof from, "training iterations: annotation %s", it->marker);
        else
            snprintf(from, sizeof from, "a loop of period %zu entries: repeating allocation at %s",
                     it->n > 1 ? (it->items[it->n - 1].entry - it->items[0].entry) / (it->n - 1) : 0, it->marker);
        /* a first step that allocates for good (optimizer state, the first batch's caches)
         * and no change after it reads as that, not as "from A to B" at 0 B a step */
        int flat_after_first = it->n >= 3 && it->items[1].live_bytes != it->items[0].live_bytes;
        for (size_t i = 2; i < it->n && flat_after_first; i++)
            flat_after_first = it->items[i].live_bytes == it->items[1].live_bytes;
        char went[160];
        if (flat_after_first)
            snprintf(went, sizeof went, "was %s at the first and %s at each of the %zu after it",
                     iec(it->items[0].live_bytes, a, sizeof a), iec(it->items[1].live_bytes, b, sizeof b), it->n - 1);
        else
            snprintf(went, sizeof went, "went from %s to %s", iec(it->items[0].live_bytes, a, sizeof a),
                     iec(it->items[it->n - 1].live_bytes, b, sizeof b));
        int bounded = 0, tv = od_iterations_verdict(it, &bounded);
        if (it->have_fit)
            evid(d, idx, "growth_bytes_per_iteration", it->fit.growth_per_x,
                 "%s: %zu boundaries (%s); live memory at them %s: %s%s per iteration (Theil-Sen, r2 %.4f, "
                 "trend %s%s)",
                 in->name, it->n, from, went, it->fit.growth_per_x < 0 ? "-" : "",
                 iec(clamp_u64(fabs(it->fit.growth_per_x)), c, sizeof c), it->fit.r2,
                 od_trend_verdict_name((od_trend_verdict)tv), bounded ? ": the growth is released before the trace "
                                                                        "ends" : "");
        size_t shown = 0;
        for (size_t i = 0; i < it->n_survivors && shown < 3; i++) {
            const od_survivor *sv = &it->survivors[i];
            if (sv->bytes_per_iteration == 0)
                continue;
            shown++;
            int same = strcmp(sv->site, sv->where) == 0;
            if (sv->judged_held_bytes)
                evid(d, idx, "surviving_bytes_per_iteration", (double)sv->bytes_per_iteration,
                     "%s: allocations made at %s%s%s%s outlive their iteration: %s per iteration (in %llu of %zu "
                     "judged iterations, %s in all, %s still held at the end of the trace)",
                     in->name, sv->site, same ? "" : " (", same ? "" : sv->where, same ? "" : ")",
                     iec(sv->bytes_per_iteration, a, sizeof a), (unsigned long long)sv->iterations, it->judged,
                     iec(sv->surviving_bytes, b, sizeof b), iec(sv->held_at_end_bytes, c, sizeof c));
            else
                evid(d, idx, "bounded_bytes_per_iteration", (double)sv->bytes_per_iteration,
                     "%s: allocations made at %s accumulate across iterations (%s per iteration, %s in all) but are "
                     "released at entry %zu (%s): bounded accumulation, not a leak",
                     in->name, sv->site, iec(sv->bytes_per_iteration, a, sizeof a),
                     iec(sv->surviving_bytes, b, sizeof b), sv->released_index,
                     sv->released_at[0] ? sv->released_at : "no frames");
        }
        if (!shown && it->judged)
            evid(d, idx, "surviving_bytes_per_iteration", 0,
                 "%s: nothing allocated in the %zu judged iterations outlives them", in->name, it->judged);
    } else if (ds->has_trace) {
        evid(d, idx, NULL, 0, "%s: no repeating iterations found in the trace (%llu entries)", in->name,
             (unsigned long long)ds->entries);
    } else {
        evid(d, idx, NULL, 0, "%s: the snapshot has no trace (torch 1.13 layout): no iterations or peak", in->name);
    }
    const od_categories *cat = f->categories;
    if (cat && cat->total_bytes) {
        char buf[600];
        size_t o = 0;
        for (int k = 0; k < OD_CAT_COUNT && o < sizeof buf - 80; k++)
            if (cat->bytes[k])
                o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%s %s", o ? ", " : "",
                                      od_category_name((od_category)k), iec(cat->bytes[k], a, sizeof a));
        evid(d, idx, "peak_bytes", (double)cat->total_bytes, "%s: %s live at the peak%s: %s", in->name,
             iec(cat->total_bytes, b, sizeof b), cat->have_peak ? "" : " (no trace: live at the end)", buf);
        if (cat->n_top_modules)
            evid(d, idx, "module_bytes", (double)cat->top_modules[0].bytes,
                 "%s: by module path (nested forwards), the most live at the peak is under %s: %s", in->name,
                 cat->top_modules[0].path, iec(cat->top_modules[0].bytes, a, sizeof a));
        double share = (double)cat->bytes[OD_CAT_UNKNOWN] / (double)cat->total_bytes;
        if (cat->bytes[OD_CAT_UNKNOWN])
            evid(d, idx, "unknown_share", share, "%s: %.1f%% of the peak is of unknown purpose (%s)", in->name,
                 100.0 * share, iec(cat->bytes[OD_CAT_UNKNOWN], a, sizeof a));
    }
    const od_inference *inf = &f->inference;
    if (inf->is_inference) {
        evid(d, idx, "decode_steps", (double)inf->decode_steps,
             "%s: an inference (generate) trace: %llu decode steps seen; weights %s (inferred: live before the trace "
             "began and through its last decode step)",
             in->name, (unsigned long long)inf->decode_steps, iec(inf->weights_bytes, a, sizeof a));
        if (inf->recomputes_each_step)
            evid(d, idx, "step_growth_ratio", inf->step_growth_ratio,
                 "%s: each decode step allocates more than the one before (the last %.1fx the first) while live memory "
                 "stays flat: no KV cache is kept, so every step recomputes the whole sequence (generate() with "
                 "use_cache=False; its generation_config may carry it)",
                 in->name, inf->step_growth_ratio);
        else if (inf->kv_cache_bytes_per_token)
            evid(d, idx, "kv_cache_bytes_per_token", (double)inf->kv_cache_bytes_per_token,
                 "%s: live memory grows by %s per decode step: the KV cache, one position for the whole batch",
                 in->name, iec(inf->kv_cache_bytes_per_token, a, sizeof a));
    }
    if (f->graph_pools)
        evid(d, idx, "graph_pool_reserved_bytes", (double)f->graph_pool_reserved_bytes,
             "%s: %zu CUDA-graph private pool%s (id (%lld, %lld)) hold%s %s in %llu segment%s (%s allocated): they "
             "belong to the captured graphs, and eager allocations cannot use them; they are released only when "
             "the graphs are deleted",
             in->name, f->graph_pools, f->graph_pools == 1 ? "" : "s", (long long)f->graph_pool_id[0],
             (long long)f->graph_pool_id[1], f->graph_pools == 1 ? "s" : "", iec(f->graph_pool_reserved_bytes, a, sizeof a),
             (unsigned long long)f->graph_pool_segments, f->graph_pool_segments == 1 ? "" : "s",
             iec(f->graph_pool_allocated_bytes, b, sizeof b));
    if (f->side_stream_free_bytes >= MiB) {
        char graph[160] = "";
        if (f->side_stream_graph_free_bytes)
            snprintf(graph, sizeof graph, "; %s of it lies in CUDA-graph pools, which empty_cache() leaves to the "
                     "graphs", iec(f->side_stream_graph_free_bytes, b, sizeof b));
        evid(d, idx, "side_stream_free_bytes", (double)f->side_stream_free_bytes,
             "%s: stream %llu caches %s free in its own segments: blocks are cached per stream, so the default "
             "stream cannot reuse them (empty_cache() releases the unsplit ones outside graph pools)%s",
             in->name, (unsigned long long)f->side_stream, iec(f->side_stream_free_bytes, a, sizeof a), graph);
    }
    if (f->have_spike) {
        const od_iteration *x = &f->iterations->items[f->spike_iteration];
        /* Windows run from one boundary to the next: with Optimizer.step STARTs, window k
         * holds training step k + 2's forward and backward (step 1's come before the first
         * boundary). */
        int train = f->iterations->source == OD_ITER_ANNOTATIONS;
        evid(d, idx, "spike_peak_bytes", (double)f->spike_peak_bytes,
             "%s: %s %zu (entries %zu-%zu) peaks at %s, against %s typically (the median of the others)%s%s",
             in->name, train ? "training step" : "loop iteration", f->spike_iteration + (train ? 2 : 1), x->entry,
             f->iterations->items[f->spike_iteration + 1].entry,
             iec(f->spike_peak_bytes, a, sizeof a), iec(f->typical_peak_bytes, b, sizeof b),
             f->spike_sites[0] ? "; allocations grew there at " : "", f->spike_sites);
    }
}

/* Evidence by weight: an OOM's own facts first, then what the snapshot holds. */
static void evidence_from_snapshot(od_diagnosis *d, const od_diag_input *in, size_t idx, const od_snapshot_findings *f)
{
    if (f->have_oom)
        evidence_oom(d, in, idx, f);
    evidence_contents(d, in, idx, f);
}

static od_status analyze_snapshot(od_diagnosis *d, const od_diag_input *ins, size_t n, size_t idx,
                                  const od_diag_options *opts, od_error *err)
{
    const od_diag_input *in = &ins[idx];
    od_summary *sum = NULL;
    od_status rc = od_summarize(in->snapshot, &sum, err);
    if (rc != OD_OK)
        return rc;
    d->summary_input[d->n_summaries] = idx;
    d->summaries[d->n_summaries++] = sum;
    od_snapshot_findings *nf = realloc(d->snapshots, (d->n_snapshots + sum->n_devices + 1) * sizeof *nf);
    if (!nf)
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    d->snapshots = nf;
    for (size_t k = 0; k < sum->n_devices; k++) {
        od_snapshot_findings *f = &d->snapshots[d->n_snapshots++];
        memset(f, 0, sizeof *f);
        f->input = idx;
        f->device = sum->devices[k].device;
        f->figures = &sum->devices[k];
        if ((rc = od_iterations_find(f->figures->trace, 1, &f->iterations, err)) != OD_OK)
            return rc;
        od_inference_find(f->figures->trace, f->iterations, &f->inference);
        size_t weights_until = SIZE_MAX;
        if (f->inference.is_inference && f->iterations->n)
            weights_until = f->iterations->items[f->iterations->n - 1].entry;
        if ((rc = od_categorize_with(f->figures->trace, weights_until, f->iterations, &f->categories,
                                     &f->life_categories, err)) != OD_OK)
            return rc;
        oom_state(f);
        if (f->have_oom && !(f->iterations && f->iterations->source != OD_ITER_NONE && f->iterations->n >= 2))
            od_step_need_estimate(f->figures->trace, f->figures->ooms[f->figures->n_ooms - 1].index,
                                  f->life_categories, &f->need);
        held_at_oom(f);
        find_spike(f);
        if ((rc = pools_findings(in->snapshot, f, err)) != OD_OK)
            return rc;
        f->cap_bytes = known_cap(ins, n, opts, f->device, &f->cap_source);
        f->verdict = snapshot_verdict(f);
        if ((rc = run_whatifs(in->snapshot, f, ins, n, opts, err)) != OD_OK)
            return rc;
    }
    return OD_OK;
}

/* The peak of a snapshot: allocated block bytes at the trace's peak (trace.h), else the
 * bytes allocated at the end. */
static uint64_t findings_peak(const od_snapshot_findings *f)
{
    const od_trace *t = f->figures->trace;
    if (t && t->has_trace && t->n_entries)
        return t->peak_block_bytes;
    return f->figures->allocated_bytes;
}

/* Expected (plan) vs actual, category by category: the category that exceeds its
 * expectation the most is where the framework did something the plan did not foresee.
 * An excess of 5% of the peak or more is named. */
static void expected_vs_actual(od_diagnosis *d, const od_diag_input *ins, const od_estimate *e, size_t from)
{
    if (!e)
        return;
    for (size_t k = 0; k < d->n_snapshots; k++) {
        od_snapshot_findings *f = &d->snapshots[k];
        if (!f->categories || !f->categories->total_bytes)
            continue;
        const od_breakdown *b = &e->at_peak;
        f->have_expected = 1;
        f->expected_bytes[OD_CAT_PARAMETERS] = b->parameters;
        f->expected_bytes[OD_CAT_GRADIENTS] = b->gradients;
        f->expected_bytes[OD_CAT_OPTIMIZER_STATES] = b->optimizer_states;
        f->expected_bytes[OD_CAT_ACTIVATIONS] = b->activations;
        f->expected_bytes[OD_CAT_LOGITS_AND_LOSS] = b->logits_and_loss;
        f->expected_bytes[OD_CAT_KV_CACHE] = b->kv_cache;
        f->expected_bytes[OD_CAT_TEMPORARIES] = b->temporaries;
        f->expected_bytes[OD_CAT_WORKSPACE] = b->workspace;
        f->expected_peak_bytes = e->peak_allocated_bytes;
        f->worst_category = -1;
        char buf[700], a[32], c[32], g[32];
        size_t o = 0;
        for (int cat = 0; cat < OD_CAT_COUNT; cat++) {
            uint64_t act = f->categories->bytes[cat], exp = f->expected_bytes[cat];
            if ((act || exp) && o < sizeof buf - 100)
                o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%s %s vs %s", o ? ", " : "",
                                      od_category_name((od_category)cat), iec(act, a, sizeof a), iec(exp, c, sizeof c));
            int64_t ex = (int64_t)(act > INT64_MAX ? INT64_MAX : act) - (int64_t)(exp > INT64_MAX ? INT64_MAX : exp);
            if (ex > 0 && (f->worst_category < 0 || ex > f->worst_excess_bytes)) {
                f->worst_category = cat;
                f->worst_excess_bytes = ex;
            }
        }
        evid(d, f->input, "expected_peak_bytes", (double)e->peak_allocated_bytes,
             "%s: actual vs expected (plan of %s) at the peak: %s in all vs %s; %s", ins[f->input].name,
             from != OD_NO_INPUT ? ins[from].name : "the model", iec(f->categories->total_bytes, a, sizeof a), iec(e->peak_allocated_bytes, c, sizeof c),
             buf);
        /* Small excesses are the plan's error, not a surprise: 5% of the peak. */
        if (f->worst_category >= 0 && (double)f->worst_excess_bytes >= 0.05 * (double)e->peak_allocated_bytes) {
            int w = f->worst_category;
            const char *site = f->categories->top_site[w];
            uint64_t base = f->expected_bytes[w];
            char pct[48] = "";
            if (base > 0)
                snprintf(pct, sizeof pct, " (+%.0f%%)", 100.0 * (double)f->worst_excess_bytes / (double)base);
            evid(d, f->input, "excess_bytes", (double)f->worst_excess_bytes,
                 "%s: %s exceed the plan the most: %s more than expected%s, mostly from %s", ins[f->input].name,
                 od_category_name((od_category)w), iec((uint64_t)f->worst_excess_bytes, g, sizeof g), pct,
                 site[0] ? site : "unknown sites");
        } else {
            evid(d, f->input, "excess_bytes", f->worst_category >= 0 ? (double)f->worst_excess_bytes : 0,
                 "%s: no category exceeds the plan by 5%% of the expected peak (%s) or more", ins[f->input].name,
                 iec(e->peak_allocated_bytes, g, sizeof g));
        }
    }
}

/* Several snapshots (ranks, or before/after): one compact line each, the one that peaked
 * highest (and the one that failed first), the imbalance, and the purpose that makes the
 * difference against the lowest. */
/* The highest, the lowest (never the same) and the first to fail of several snapshots. */
static void rank_snapshots(od_diagnosis *d)
{
    d->first_oom_snapshot = SIZE_MAX;
    if (d->n_snapshots < 2)
        return;
    size_t hi = 0, lo = 0;
    for (size_t i = 1; i < d->n_snapshots; i++) {
        uint64_t p = findings_peak(&d->snapshots[i]);
        if (p > findings_peak(&d->snapshots[hi]))
            hi = i;
        if (p < findings_peak(&d->snapshots[lo]))
            lo = i;
    }
    if (lo == hi) /* all equal: the lowest is any other one */
        lo = hi == 0 ? 1 : 0;
    d->highest_snapshot = hi;
    d->lowest_snapshot = lo;
    uint64_t ph = findings_peak(&d->snapshots[hi]), pl = findings_peak(&d->snapshots[lo]);
    d->imbalance = ph ? (double)(ph - pl) / (double)ph : 0;
    /* The first to fail, by wall time (ranks run side by side). */
    for (size_t i = 0; i < d->n_snapshots; i++) {
        const od_snapshot_findings *f = &d->snapshots[i];
        size_t fo = d->first_oom_snapshot;
        if (f->have_oom && (fo == SIZE_MAX || f->figures->ooms[f->figures->n_ooms - 1].time_us <
                                                  d->snapshots[fo].figures->ooms[d->snapshots[fo].figures->n_ooms - 1].time_us))
            d->first_oom_snapshot = i;
    }
}

/* With more than two snapshots (ranks), only the highest and the first to fail get their
 * own evidence; the rest are a line each in the table. */
static int detailed_snapshot(const od_diagnosis *d, size_t k)
{
    return d->n_snapshots <= 2 || k == d->highest_snapshot || k == d->first_oom_snapshot;
}

/* Several snapshots (ranks, or before/after): one compact line each, the one that peaked
 * highest (and the one that failed first), the imbalance, and the purpose that makes the
 * difference against the lowest. */
static void compare_snapshots(od_diagnosis *d, const od_diag_input *ins)
{
    if (d->n_snapshots < 2)
        return;
    size_t hi = d->highest_snapshot, lo = d->lowest_snapshot;
    const od_snapshot_findings *H = &d->snapshots[hi], *L = &d->snapshots[lo];
    char a[32], b[32], c[32], e[32];
    uint64_t ph = findings_peak(H), pl = findings_peak(L);
    /* The table: one line per snapshot. */
    for (size_t i = 0; i < d->n_snapshots; i++) {
        const od_snapshot_findings *f = &d->snapshots[i];
        char oom[96] = "";
        if (f->have_oom)
            snprintf(oom, sizeof oom, ", OOM at entry %zu (+%.3f s)", f->figures->ooms[f->figures->n_ooms - 1].index,
                     (double)(f->figures->ooms[f->figures->n_ooms - 1].time_us - f->figures->first_time_us) / 1e6);
        evid(d, f->input, "snapshot_peak_bytes", (double)findings_peak(f),
             "%-28s device %lld  peak %10s  reserved %10s  %s%s%s", short_name(ins[f->input].name), (long long)f->device,
             iec(findings_peak(f), a, sizeof a), iec(f->figures->reserved_bytes, b, sizeof b), od_verdict_name(f->verdict),
             oom, i == hi ? "  <- highest" : "");
    }
    size_t first = d->first_oom_snapshot;
    if (first != SIZE_MAX && d->n_snapshots > 1)
        evid(d, d->snapshots[first].input, NULL, 0, "%s (device %lld) ran out of memory first",
             short_name(ins[d->snapshots[first].input].name), (long long)d->snapshots[first].device);
    char why[700] = "";
    if (H->categories && L->categories) {
        int best = -1;
        uint64_t best_d = 0;
        for (int k = 0; k < OD_CAT_COUNT; k++) {
            uint64_t x = H->categories->bytes[k], y = L->categories->bytes[k];
            if (x > y && x - y > best_d) {
                best_d = x - y;
                best = k;
            }
        }
        if (best >= 0)
            snprintf(why, sizeof why, ": its %s are %s larger (%s vs %s), mostly from %s",
                     od_category_name((od_category)best), iec(best_d, a, sizeof a),
                     iec(H->categories->bytes[best], b, sizeof b), iec(L->categories->bytes[best], c, sizeof c),
                     H->categories->top_site[best][0] ? H->categories->top_site[best] : "unknown sites");
    }
    evid(d, OD_NO_INPUT, "highest_peak_bytes", (double)ph,
         "%s (device %lld) peaks highest of %zu snapshots: %s vs %s at the lowest (%s, device %lld), an imbalance of "
         "%.1f%%%s",
         short_name(ins[H->input].name), (long long)H->device, d->n_snapshots, iec(ph, e, sizeof e),
         iec(pl, a, sizeof a), short_name(ins[L->input].name), (long long)L->device, 100.0 * d->imbalance, why);
}

/* A JAX device's memory_stats() figures, read from a JSON profile or from a dict printed in
 * a log: one sentence for both. */
typedef struct {
    uint64_t in_use, limit, peak, largest_free;
    int has_peak, has_largest_free;
} jax_stats;

static void jax_stats_evidence(od_diagnosis *d, size_t idx, const char *name, const jax_stats *j)
{
    char a[32], b[32], c[32], e[32];
    evid(d, idx, "bytes_in_use", (double)j->in_use, "%s: JAX memory_stats: %s in use of a %s limit (peak %s), largest free block %s",
         name, iec(j->in_use, a, sizeof a), iec(j->limit, b, sizeof b), j->has_peak ? iec(j->peak, c, sizeof c) : "?",
         j->has_largest_free ? iec(j->largest_free, e, sizeof e) : "?");
}

/* The JAX memory_stats figures an input holds: a JSON profile of them, or a dict printed in
 * a log; 0 for any other input, or without bytes_in_use and bytes_limit. */
static int input_jax_stats(const od_diag_input *in, jax_stats *j)
{
    const od_profile *p = in->kind == OD_INPUT_PROFILE ? in->profile : NULL;
    const od_mem_stats *m = in->kind == OD_INPUT_LOG && in->triage ? in->triage->stats : NULL;
    if (p && p->kind == OD_PROFILE_JAX_STATS && p->stats.has_bytes_in_use && p->stats.has_bytes_limit) {
        *j = (jax_stats){p->stats.bytes_in_use, p->stats.bytes_limit, p->stats.peak_bytes_in_use,
                         p->stats.largest_free_block_bytes, p->stats.has_peak_bytes_in_use,
                         p->stats.has_largest_free_block_bytes};
        return 1;
    }
    if (m && m->jax && (m->have & OD_MS_ALLOCATED) && (m->have & OD_MS_LIMIT)) {
        *j = (jax_stats){m->allocated_bytes, m->limit_bytes, m->allocated_peak_bytes, m->largest_free_block_bytes,
                         (m->have & OD_MS_ALLOCATED_PEAK) != 0, (m->have & OD_MS_LARGEST_FREE) != 0};
        return 1;
    }
    return 0;
}

/* The peak held all but 2 % of the limit or less: the device was full then (JAX counts no
 * OOMs, so this is what says one was near). */
static int jax_stats_full(const jax_stats *j)
{
    return j->has_peak && j->limit && j->peak >= j->limit - j->limit / 50;
}

/* Some input is JAX's own: its memory_stats (a profile or a dict in a log) or its device
 * memory profile. */
static int inputs_are_jax(const od_diag_input *ins, size_t n)
{
    jax_stats js;
    for (size_t i = 0; i < n; i++)
        if (input_jax_stats(&ins[i], &js) ||
            (ins[i].kind == OD_INPUT_PROFILE && ins[i].profile && ins[i].profile->kind == OD_PROFILE_JAX_PPROF))
            return 1;
    return 0;
}

/* ---------- logs and series ---------- */

static void evidence_from_log(od_diagnosis *d, const od_diag_input *in, size_t idx)
{
    char a[32], b[32], c[32], e[32], reason[512];
    const od_triage *t = in->triage;
    if (t->n_reports) {
        const od_oom_report *r = &t->reports[t->n_reports - 1];
        od_oom_reason(r, reason, sizeof reason);
        evid(d, idx, "requested_bytes", (double)r->requested_bytes, "%s: %s OOM (line %llu): %s", in->name,
             od_framework_name(r->framework), (unsigned long long)r->line, reason);
        if (t->n_reports > 1)
            evid(d, idx, NULL, (double)t->n_reports, "%s: %zu OOM reports; the last one is used", in->name,
                 t->n_reports);
        const char *note = od_oom_request_note(r);
        if (note && r->verdict != OD_OOM_UNKNOWN)
            evid(d, idx, NULL, 0, "requested %s: %s", iec(r->requested_bytes, a, sizeof a), note);
        const char *meaning = od_advice_meaning(r);
        if (meaning)
            evid(d, idx, NULL, 0, "%s: what it means: %s", in->name, meaning);
    }
    for (size_t i = 0; i < t->n_summaries; i++) {
        const od_mem_summary *m = &t->summaries[i];
        uint64_t ru = m->reserved_bytes > m->allocated_bytes ? m->reserved_bytes - m->allocated_bytes : 0;
        if (!m->have_non_releasable)
            snprintf(e, sizeof e, "no row for");
        else
            iec(m->non_releasable_bytes, e, sizeof e);
        evid(d, idx, m->have_non_releasable ? "non_releasable_bytes" : NULL, (double)m->non_releasable_bytes,
             "%s: memory_summary: %s allocated, %s reserved (%s unallocated, %s non-releasable), %llu OOMs",
             in->name, iec(m->allocated_bytes, a, sizeof a), iec(m->reserved_bytes, b, sizeof b),
             iec(ru, c, sizeof c), e, (unsigned long long)m->ooms);
    }
    jax_stats js;
    if (input_jax_stats(in, &js))
        jax_stats_evidence(d, idx, in->name, &js);
    if (t->stats && !t->stats->jax && (t->stats->have & OD_MS_RESERVED) && (t->stats->have & OD_MS_ALLOCATED))
        evid(d, idx, "reserved_bytes", (double)t->stats->reserved_bytes,
             "%s: memory_stats: %s allocated (peak %s), %s reserved, %llu OOMs", in->name,
             iec(t->stats->allocated_bytes, a, sizeof a), iec(t->stats->allocated_peak_bytes, b, sizeof b),
             iec(t->stats->reserved_bytes, c, sizeof c), (unsigned long long)t->stats->ooms);
    for (size_t i = 0; i < t->n_procs; i++)
        evid(d, idx, "process_bytes", (double)t->procs[i].bytes, "%s: nvidia-smi: process %llu (%s) holds %s on GPU %d",
             in->name, (unsigned long long)t->procs[i].pid, t->procs[i].name, iec(t->procs[i].bytes, a, sizeof a),
             t->procs[i].gpu);
    for (size_t i = 0; i < t->n_gpus; i++)
        evid(d, idx, "used_bytes", (double)t->gpus[i].used_bytes, "%s: nvidia-smi: GPU %d: %s used of %s", in->name,
             t->gpus[i].index, iec(t->gpus[i].used_bytes, a, sizeof a), iec(t->gpus[i].total_bytes, b, sizeof b));
}

static void evidence_from_series(od_diagnosis *d, const od_diag_input *in, size_t idx)
{
    char a[32], b[32], c[32];
    const od_trend_fit *f = in->fit;
    const char *unit = in->series->time_indexed ? "second" : "step";
    iec(clamp_u64(fabs(f->growth_per_x)), a, sizeof a);
    evid(d, idx, in->series->time_indexed ? "growth_bytes_per_second" : "growth_bytes_per_step", f->growth_per_x,
         "%s: %s %s: %s%s per %s (Theil-Sen, r2 %.4f) over %zu %s after %zu of %s", in->name,
         od_metric_name(f->metric), od_trend_verdict_name(f->verdict), f->growth_per_x < 0 ? "-" : "", a, unit,
         f->r2, f->n_points - f->warmup_points, in->series->time_indexed ? "samples" : "steps", f->warmup_points,
         in->series->time_indexed ? "idle start and warm-up" : "warm-up");
    evid(d, idx, NULL, f->last_bytes, "%s: %s went from %s to %s", in->name, od_metric_name(f->metric),
         iec(clamp_u64(f->first_bytes), b, sizeof b), iec(clamp_u64(f->last_bytes), c, sizeof c));
}

/* ---------- profiler records ---------- */

/* Per-step series of a trace that marks optimizer steps, fitted as a step log. */
static int profile_fit(const od_profile *p, od_trend_fit *fit)
{
    if (!p || p->kind != OD_PROFILE_TORCH_TRACE || p->n_steps < 3)
        return 0;
    od_series *s = NULL;
    od_error e;
    int ok = od_profile_to_series(p, &s, &e) == OD_OK &&
             od_trend_analyze(s, OD_METRIC_ALLOCATED, 0, fit, &e) == OD_OK;
    od_series_free(s);
    return ok;
}

static void rank_text(const od_profile_ranking *r, size_t top, char *buf, size_t size)
{
    char a[32];
    size_t o = 0;
    buf[0] = 0;
    for (size_t i = 0; i < r->n && i < top && o + 1 < size; i++) {
        if (r->v[i].bytes <= 0)
            continue;
        int w = snprintf(buf + o, size - o, "%s%.120s %s", o ? ", " : "", r->v[i].name,
                         od_format_iec((uint64_t)r->v[i].bytes, a, sizeof a));
        if (w < 0)
            break;
        o += (size_t)w < size - o ? (size_t)w : size - o - 1;
    }
}

static void evidence_from_profile(od_diagnosis *d, const od_diag_input *in, size_t idx)
{
    char a[32], b[32], c[32], list[400];
    const od_profile *p = in->profile;
    jax_stats js;
    switch (p->kind) {
    case OD_PROFILE_TORCH_TRACE:
        if (!p->n_points) {
            evid(d, idx, NULL, 0, "%s: a profiler trace without GPU memory events (record with profile_memory=True)",
                 in->name);
            return;
        }
        evid(d, idx, "peak_allocated_bytes", (double)p->peak_allocated_bytes,
             "%s: profiler trace: peak allocated %s at %.1f ms%s%s, peak reserved %s", in->name,
             iec(p->peak_allocated_bytes, a, sizeof a), p->peak_time_us / 1000.0, p->n_spans ? ", during " : "",
             p->n_spans ? od_phase_name(p->peak_phase) : "", iec(p->peak_reserved_bytes, b, sizeof b));
        rank_text(&p->ops_at_peak, 3, list, sizeof list);
        if (list[0])
            evid(d, idx, NULL, (double)p->peak_tracked_bytes, "%s: live at the peak by operator: %s (%s allocated before the trace)",
                 in->name, list, iec(p->peak_untracked_bytes, c, sizeof c));
        rank_text(&p->sources_at_peak, 2, list, sizeof list);
        if (list[0] && p->with_stack)
            evid(d, idx, NULL, 0, "%s: live at the peak by source line: %s", in->name, list);
        if (p->n_steps)
            evid(d, idx, NULL, (double)p->steps[p->n_steps - 1].allocated_bytes,
                 "%s: %zu optimizer steps; after the last one %s stays allocated", in->name, p->n_steps,
                 iec(p->steps[p->n_steps - 1].allocated_bytes, a, sizeof a));
        return;
    case OD_PROFILE_TORCH_TIMELINE: {
        /* the three largest categories at the peak */
        int order[OD_PCAT_COUNT];
        for (int i = 0; i < OD_PCAT_COUNT; i++)
            order[i] = i;
        for (int i = 1; i < OD_PCAT_COUNT; i++)
            for (int j = i; j > 0 && p->peak_category_bytes[order[j]] > p->peak_category_bytes[order[j - 1]]; j--) {
                int t = order[j];
                order[j] = order[j - 1];
                order[j - 1] = t;
            }
        size_t o = 0;
        list[0] = 0;
        for (int i = 0; i < 3 && p->peak_category_bytes[order[i]]; i++)
            o += (size_t)snprintf(list + o, sizeof list - o, "%s%s %s", i ? ", " : "",
                                  od_profile_category_name((od_profile_category)order[i]),
                                  iec(p->peak_category_bytes[order[i]], a, sizeof a));
        evid(d, idx, "peak_allocated_bytes", (double)p->peak_allocated_bytes,
             "%s: memory timeline: peak %s at %.1f ms, largest: %s", in->name,
             iec(p->peak_allocated_bytes, b, sizeof b), p->peak_time_us / 1000.0, list);
        return;
    }
    case OD_PROFILE_TORCH_TABLE:
        rank_text(&p->ops_self, 3, list, sizeof list);
        evid(d, idx, NULL, 0, "%s: key_averages: most self device memory: %s", in->name, list[0] ? list : "none");
        return;
    case OD_PROFILE_JAX_PPROF:
        rank_text(&p->by_source, 2, list, sizeof list);
        evid(d, idx, "live_bytes", (double)p->live_bytes, "%s: JAX memory profile: %s live in %llu buffers%s%s",
             in->name, iec(p->live_bytes, a, sizeof a), (unsigned long long)p->live_buffers, list[0] ? "; largest: " : "",
             list);
        return;
    case OD_PROFILE_JAX_STATS:
        if (input_jax_stats(in, &js))
            jax_stats_evidence(d, idx, in->name, &js);
        else
            evid(d, idx, NULL, 0, "%s: JAX memory_stats without bytes_in_use and bytes_limit", in->name);
        return;
    case OD_PROFILE_BFC_LOG:
        if (p->bfc.n_free_chunks)
            evid(d, idx, "largest_free_block_bytes", (double)p->bfc.largest_free_chunk_bytes,
                 "%s: BFC allocator: %s free in %llu chunks, the largest %s", in->name,
                 iec(p->bfc.free_chunk_bytes, a, sizeof a), (unsigned long long)p->bfc.n_free_chunks,
                 iec(p->bfc.largest_free_chunk_bytes, b, sizeof b));
        if (p->bfc.has_stats)
            evid(d, idx, "bytes_in_use", (double)p->bfc.in_use_bytes, "%s: BFC allocator stats: %s in use of a %s limit",
                 in->name, iec(p->bfc.in_use_bytes, a, sizeof a), iec(p->bfc.limit_bytes, b, sizeof b));
        return;
    default:
        return;
    }
}

/* An OOM report without pool figures (JAX/XLA, TF) completed by a profile of the same
 * device: memory_stats or the BFC log's Stats and chunks. A request beyond the limit
 * less what was in use cannot fit (capacity); one that fits that headroom but not the
 * largest free block is fragmentation. Returns 1 when it decided. */
static int complete_from_profiles(od_diagnosis *d, const od_diag_input *ins, size_t n)
{
    const od_oom_report *r = d->report;
    if (!r || !r->requested_bytes || r->have_headroom ||
        (d->verdict != OD_VERDICT_UNKNOWN && d->verdict != OD_VERDICT_CAPACITY))
        return 0;
    for (size_t i = 0; i < n; i++) {
        const od_profile *p = ins[i].profile;
        if (!p)
            continue;
        uint64_t limit = 0, in_use = 0, largest = 0;
        int have = 0, have_largest = 0;
        if (p->kind == OD_PROFILE_JAX_STATS && p->stats.has_bytes_limit && p->stats.has_bytes_in_use) {
            limit = p->stats.bytes_limit;
            in_use = p->stats.bytes_in_use;
            have = 1;
            if (p->stats.has_largest_free_block_bytes) {
                largest = p->stats.largest_free_block_bytes;
                have_largest = 1;
            }
        } else if (p->kind == OD_PROFILE_BFC_LOG && p->bfc.has_stats && p->bfc.limit_bytes) {
            limit = p->bfc.limit_bytes;
            in_use = p->bfc.in_use_bytes;
            have = 1;
            if (p->bfc.n_free_chunks) {
                largest = p->bfc.largest_free_chunk_bytes;
                have_largest = 1;
            }
        }
        if (!have)
            continue;
        char a[32], b[32], c[32], e[32];
        uint64_t headroom = limit > in_use ? limit - in_use : 0;
        if (r->requested_bytes > headroom) {
            d->verdict = OD_VERDICT_CAPACITY;
            evid(d, i, "requested_bytes", (double)r->requested_bytes,
                 "the %s request exceeds the %s limit less the %s in use (%s, from %s%s): the memory does not exist",
                 iec(r->requested_bytes, a, sizeof a), iec(limit, b, sizeof b), iec(in_use, c, sizeof c),
                 iec(headroom, e, sizeof e), ins[i].name,
                 p->kind == OD_PROFILE_JAX_STATS ? ", taken when it was saved, not necessarily at the OOM" : "");
            return 1;
        }
        if (have_largest && r->requested_bytes > largest) {
            d->verdict = OD_VERDICT_FRAGMENTATION;
            evid(d, i, "largest_free_block_bytes", (double)largest,
                 "the %s request fits the %s free under the limit but not the largest free block, %s (%s)",
                 iec(r->requested_bytes, a, sizeof a), iec(headroom, b, sizeof b), iec(largest, c, sizeof c),
                 ins[i].name);
            return 1;
        }
    }
    return 0;
}

/* ---------- remedies ---------- */

/* ---------- prescriptions, each checked by a model before it is advised ---------- */

typedef struct {
    od_diagnosis *d;
    const od_diag_input *ins;
    size_t n;
    const od_diag_options *o;
    const od_oom_report *r;            /* the OOM report that decided, or NULL */
    const od_snapshot_findings *sf;    /* the snapshot with the OOM (or the leak), or NULL */
    const char *snap_name;             /* its input's name */
    const char *log_name;              /* the log with the report, or NULL */
    const char *conf;                  /* PYTORCH_CUDA_ALLOC_CONF or PYTORCH_HIP_ALLOC_CONF */
    uint64_t cap;                      /* the per-process cap the run had, 0 = unknown */
    const char *cap_source;
    uint64_t total;                    /* the device's memory, 0 = unknown */
    const char *cfg;                   /* the config's name for commands, "<config.json>" if none */
    char snap_arg[200], cfg_arg[200];  /* snap_name and cfg as a shell reads them (shell_arg) */
    od_torch_range ver;                /* the releases the evidence allows (od_torch_range) */
    int have_ver;
} rx;

static od_check check_of(od_check_method m, int avoids, uint64_t peak, uint64_t releases, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static od_check check_of(od_check_method m, int avoids, uint64_t peak, uint64_t releases, const char *fmt, ...)
{
    od_check c;
    memset(&c, 0, sizeof c);
    c.method = m;
    c.avoids_oom = avoids;
    c.predicted_peak_bytes = peak;
    c.releases_bytes = releases;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c.detail, sizeof c.detail, fmt, ap);
    va_end(ap);
    return c;
}

const char *od_check_method_name(od_check_method m)
{
    static const char *const n[] = {"none", "replay", "plan", "arithmetic"};
    return (unsigned)m < 4 ? n[m] : "?";
}

/* An input's name as an argument of a printed command, so that the command runs as
 * printed: the placeholder for standard input ("<stdin>", which the user pipes from a file
 * oomdoc never saw) or no name, the name itself when the shell leaves it alone, else in
 * single quotes (a quote inside as '\''). Returns buf. */
static const char *shell_arg(const char *name, const char *placeholder, char *buf, size_t size)
{
    size_t len = name ? strlen(name) : 0;
    /* a name too long for buf would print a command naming another file */
    if (!len || !strcmp(name, "-") || name[0] == '<' || len + 3 > size) { /* "<stdin>": a placeholder */
        snprintf(buf, size, "%s", placeholder);
        return buf;
    }
    /* a leading '-' would be read as an option: ./-name is the same file */
    const char *dot = name[0] == '-' ? "./" : "";
    if (strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./:+-=,@%") == len) {
        snprintf(buf, size, "%s%s", dot, name); /* fits: len + 3 <= size */
        return buf;
    }
    size_t n = 0;
    buf[n++] = '\'';
    for (const char *p = dot; *p; p++)
        buf[n++] = *p;
    for (const char *p = name; *p; p++) {
        const char *piece = *p == '\'' ? "'\\''" : NULL;
        size_t k = piece ? 4 : 1;
        if (n + k + 2 > size) { /* does not fit: a command cut short would not run */
            snprintf(buf, size, "%s", placeholder);
            return buf;
        }
        if (piece)
            memcpy(buf + n, piece, k);
        else
            buf[n] = *p;
        n += k;
    }
    buf[n++] = '\'';
    buf[n] = '\0';
    return buf;
}

/* Copy src into dst of size bytes, cut to fit. */
static void copy_text(char *dst, size_t size, const char *src)
{
    size_t l = strlen(src);
    if (l >= size)
        l = size - 1;
    memcpy(dst, src, l);
    dst[l] = 0;
}

/* Advise (do now or long term) an item whose check did not show it fails; one whose check
 * shows it does not avoid the OOM goes to the evidence as tried, with the check's reason. */
static void advise(rx *x, int now_, int klass, double cost, const char *action, const char *effect,
                   const char *command, od_check c)
{
    od_diagnosis *d = x->d;
    if (c.avoids_oom == 0 && now_) {
        evid(d, x->sf && c.method != OD_CHECK_PLAN ? x->sf->input : OD_NO_INPUT, "tried", 0,
             "tried: %s -- does not avoid the OOM: %s", action, c.detail);
        return;
    }
    /* Version-aware: a "do now" item never names what the user's torch lacks; it becomes
     * the upgrade that would bring it. One the version may lack says what it needs. */
    char up[480], det[720];
    int upgraded = 0;
    if (now_) {
        int lacks = 0;
        int f = od_advice_for_version(action, effect, c.detail, x->have_ver ? &x->ver : NULL, up, sizeof up, &lacks);
        if (f >= 0) {
            char v[32], span[80];
            od_torch_version_format(od_torch_since((od_torch_feature)f), v, sizeof v);
            if (lacks) {
                snprintf(det, sizeof det, "%s; this torch (%s) lacks %s", c.detail,
                         od_torch_range_format(&x->ver, span, sizeof span), od_torch_feature_name((od_torch_feature)f));
                copy_text(c.detail, sizeof c.detail, det);
                action = up;
                now_ = 0;
                upgraded = 1;
            } else {
                if (x->have_ver && od_torch_version_known(x->ver.lower))
                    snprintf(det, sizeof det, "%s; needs torch >= %s (the evidence allows %s)", c.detail, v,
                             od_torch_range_format(&x->ver, span, sizeof span));
                else
                    snprintf(det, sizeof det, "%s; needs torch >= %s", c.detail, v);
                copy_text(c.detail, sizeof c.detail, det);
            }
        }
    }
    /* a replay needs a trace, which the user's torch may not record */
    command = od_advice_command(command, x->have_ver ? &x->ver : NULL, upgraded);
    od_remedy *arr = now_ ? d->do_now : d->long_term;
    size_t *n = now_ ? &d->n_do_now : &d->n_long_term;
    if (*n >= MAX_REMEDIES)
        return;
    od_remedy *m = &arr[(*n)++];
    memset(m, 0, sizeof *m);
    snprintf(m->action, sizeof m->action, "%s", action);
    snprintf(m->effect, sizeof m->effect, "%s", effect);
    snprintf(m->command, sizeof m->command, "%s", command ? command : "");
    m->check = c;
    m->rank_class = klass;
    m->cost = cost;
}

/* The same, in advice.h's one wording; command NULL: the advice's own. */
static void advise_as(rx *x, int now_, int klass, double cost, od_advice a, const char *command, od_check c)
{
    const od_advice_text *t = od_advice_get(a);
    advise(x, now_, klass, cost, t->action, t->effect, command ? command : t->command, c);
}

static int cmp_remedy(const void *pa, const void *pb)
{
    const od_remedy *a = pa, *b = pb;
    if (a->rank_class != b->rank_class)
        return a->rank_class < b->rank_class ? -1 : 1;
    return a->cost < b->cost ? -1 : a->cost > b->cost;
}

/* Stable sort by (class, cost): the order of insertion breaks ties. */
static void rank_remedies(od_remedy *arr, size_t n)
{
    for (size_t i = 1; i < n; i++) /* insertion sort: a handful of items, stable */
        for (size_t j = i; j > 0 && cmp_remedy(&arr[j - 1], &arr[j]) > 0; j--) {
            od_remedy t = arr[j];
            arr[j] = arr[j - 1];
            arr[j - 1] = t;
        }
}

static uint64_t round_up_mib(uint64_t v)
{
    uint64_t m = 1ull << 20;
    return (v + m - 1) / m * m;
}

/* The bytes empty_cache() would have given back just before the OOM: segments holding no
 * live block then (od_layout_at). The allocator itself releases those before it raises
 * the OOM, so this is what a call in the program could add: usually nothing. */
static uint64_t releasable_bytes(const od_snapshot_findings *f)
{
    const od_trace *t = f->figures->trace;
    const od_device_summary *ds = f->figures;
    if (!t || !t->has_trace || !ds->n_ooms)
        return 0;
    size_t at = ds->ooms[ds->n_ooms - 1].index;
    od_layout *l = NULL;
    if (!at || od_layout_at(t, at - 1, &l, NULL) != OD_OK)
        return 0;
    uint64_t r = 0;
    for (size_t i = 0; i < l->n_segments; i++)
        if (!l->segments[i].n_blocks)
            r += l->segments[i].size;
    od_layout_free(l);
    return r;
}

/* Replay the snapshot's trace under its own settings and a cap (0: none). */
static int replay_under(const od_snapshot *s, int64_t device, uint64_t cap, od_replay_result *res)
{
    od_replay_opts o;
    memset(&o, 0, sizeof o);
    od_replay_config_from_snapshot(s, &o.cfg);
    o.cfg.allowed_bytes = cap;
    o.device = device;
    od_error e;
    return od_replay_snapshot(s, &o, res, &e) == OD_OK;
}

/* Whether the trace holds at least one whole training step (else figures from it are a
 * lower bound of the step's need). */
static int step_completed(const od_snapshot_findings *f)
{
    return f->iterations && f->iterations->source != OD_ITER_NONE && f->iterations->n >= 2;
}

static void workload_flags(const rx *x, const od_workload *w, char *buf, size_t size)
{
    od_plan_workload_flags(w, buf, size);
    (void)x;
}

/* The phase the OOM fell in, from the failing request's frames: a module forward, the
 * optimizer, or backward (the autograd engine allocates without Python frames). */
static const char *oom_phase(const od_snapshot_findings *f)
{
    const od_device_summary *ds = f->figures;
    const od_trace *t = ds->trace;
    if (!ds->n_ooms || !t || ds->ooms[ds->n_ooms - 1].index >= t->n_entries)
        return "step";
    uint32_t st = od_trace_at(t->entries, ds->ooms[ds->n_ooms - 1].index).stack, n;
    if (!st)
        return "backward";
    const uint32_t *fr = od_snapshot_stack(t->snap, st, &n);
    for (uint32_t i = 0; i < n; i++) {
        const od_frame *fm = &t->snap->frames[fr[i]];
        if (fm->filename && strstr(fm->filename, "/torch/optim/"))
            return "optimizer step";
        if (fm->name && strcmp(fm->name, "forward") == 0)
            return "forward";
        if (fm->name && strcmp(fm->name, "backward") == 0)
            return "backward";
    }
    return "step";
}

/* The step's full need under the cap, and the cap item: from the planner when the
 * workload is known, else from replaying the trace without a cap (a lower bound when no
 * step completed), else from the message's figures (a lower bound). */
static void cap_item(rx *x)
{
    char a[32], b[32], c[32], act[480], eff[480], cmd[480];
    uint64_t need = 0, peak = 0;
    od_check_method method = OD_CHECK_NONE;
    int exact = 0;
    char how[320] = "";
    const od_snapshot_findings *sf = x->sf;
    od_plan *pl = NULL;
    if (x->o && x->o->model && x->o->workload) {
        pl = malloc(sizeof *pl);
        od_gpu g;
        od_gpu_custom(x->total ? x->total : (uint64_t)1 << 50, &g);
        if (pl && od_plan_compute(x->o->model, x->o->workload, &g, pl, NULL) == OD_OK) {
            need = pl->estimate.peak_reserved_bytes;
            peak = pl->estimate.peak_allocated_bytes;
            method = OD_CHECK_PLAN;
            exact = 1;
            char fl[256];
            workload_flags(x, x->o->workload, fl, sizeof fl);
            snprintf(how, sizeof how, "the planner's full step: peak %s allocated, %s reserved (%s)",
                     iec(peak, a, sizeof a), iec(need, b, sizeof b), fl);
            snprintf(cmd, sizeof cmd, "oomdoc plan --config %s %s --memory %llu", x->cfg, fl,
                     (unsigned long long)round_up_mib(need + pl->cuda_context_bytes));
        }
        free(pl);
    }
    int avoids = -1;
    if (!method && sf && sf->whatif_reproduces) {
        /* The model reproduces the run under its cap; without one it serves every request
         * of the trace, and under a cap of what it then reserved it must serve them too. */
        od_replay_result *res = malloc(sizeof *res);
        if (res && replay_under(x->ins[sf->input].snapshot, sf->device, 0, res)) {
            need = round_up_mib(res->stats.peak_reserved_bytes);
            peak = res->stats.peak_allocated_bytes;
            method = OD_CHECK_REPLAY;
            exact = step_completed(sf);
            if (replay_under(x->ins[sf->input].snapshot, sf->device, need, res))
                avoids = !res->oom.happened;
            snprintf(how, sizeof how, "the trace replayed under a cap of %s serves every request%s (peak %s allocated)%s%s",
                     iec(need, a, sizeof a), avoids == 1 ? "" : " but one", iec(peak, b, sizeof b),
                     exact ? "" : "; a lower bound of the whole step's need: the run failed in its first ",
                     exact ? "" : oom_phase(sf));
            snprintf(cmd, sizeof cmd, "oomdoc replay %s --capacity %llu", x->snap_arg, (unsigned long long)need);
        }
        free(res);
    }
    if (!method && x->r && (x->r->have & OD_HAVE_ALLOCATED)) {
        need = x->r->allocated_bytes + x->r->reserved_unallocated_bytes + x->r->requested_bytes;
        peak = x->r->allocated_bytes + x->r->requested_bytes;
        method = OD_CHECK_ARITHMETIC;
        snprintf(how, sizeof how, "the message's %s in use + the %s request: a lower bound of the step's need",
                 iec(x->r->allocated_bytes + x->r->reserved_unallocated_bytes, a, sizeof a),
                 iec(x->r->requested_bytes, b, sizeof b));
        cmd[0] = 0;
    }
    if (!method)
        return;
    const od_step_need *sn = sf && !exact ? &sf->need : NULL;
    if (sn && sn->have && method == OD_CHECK_REPLAY && sn->forward_bytes > need) {
        /* the trace shows the model's layers: the forward through its last one, estimated */
        need = sn->forward_bytes;
        avoids = -1;
        snprintf(how, sizeof how, "an estimate from the trace, which ends in its first forward: %.2f of the model's "
                 "%zu layers done, %s kept per layer; through the last layer the forward needs about %s, and the "
                 "logits, the loss and backward come on top", sn->layers_done, sn->layers_total,
                 iec(sn->per_layer_bytes, a, sizeof a), iec(sn->forward_bytes, b, sizeof b));
        snprintf(cmd, sizeof cmd, "oomdoc replay %s --capacity %llu", x->snap_arg, (unsigned long long)round_up_mib(need));
        exact = 0;
        method = OD_CHECK_ARITHMETIC;
    }
    need = round_up_mib(need);
    if (!exact) {
        char more[200];
        snprintf(more, sizeof more, "; the full figure: oomdoc plan --config %s with the job's --batch and --seq", x->cfg);
        if (strlen(how) + strlen(more) < sizeof how)
            strcat(how, more);
    }
    int fits_device = !x->total || need <= x->total;
    double frac = x->total ? (double)need / (double)x->total : 0;
    if (x->total)
        snprintf(act, sizeof act, "raise torch.cuda.set_per_process_memory_fraction(...) to at least %.3f (%s of the "
                 "device's %s)", ceil(frac * 1000) / 1000, iec(need, a, sizeof a), iec(x->total, b, sizeof b));
    else
        snprintf(act, sizeof act, "raise torch.cuda.set_per_process_memory_fraction(...) so that the cap allows at "
                 "least %s (fraction = %s / the device's memory)", iec(need, a, sizeof a), iec(need, c, sizeof c));
    snprintf(eff, sizeof eff, "the cap (%s, %s) stops binding: the step needs %s%s reserved", iec(x->cap, a, sizeof a),
             x->cap_source, exact ? "" : "at least ", iec(need, b, sizeof b));
    if (method != OD_CHECK_REPLAY)
        avoids = exact ? 1 : -1;
    od_check ck = check_of(method, !fits_device ? 0 : avoids, sn && sn->have ? 0 : peak, 0, "%s%s", how,
                           fits_device ? "" : "; more than the whole device");
    /* an estimated need comes after the fixes that do not depend on it */
    advise(x, 1, 1, sn && sn->have ? 1 : 0, act, eff, cmd[0] ? cmd : NULL, ck);
}

/* Without a config, the changes the trace itself sizes when its first forward failed
 * (stepneed.h): activation checkpointing, and the micro-batch divided with gradient
 * accumulation, each against what the forward needs through its last layer. Both stay
 * unproven (avoids_oom null): the logits, the loss and backward are not in the trace. */
static void trace_recipe_items(rx *x, uint64_t target, const char *under)
{
    const od_snapshot_findings *sf = x->sf;
    if (!sf || !sf->need.have || !target || (x->o && x->o->model))
        return;
    const od_step_need *n = &sf->need;
    const od_categories *c = sf->categories;
    char a[32], b[32], e[32], act[480], eff[480];
    /* what does not scale with the micro-batch: the model's state and the workspaces */
    uint64_t fixed = n->params_bytes;
    if (c)
        fixed += c->bytes[OD_CAT_OPTIMIZER_STATES] + c->bytes[OD_CAT_WORKSPACE];
    uint64_t usable = target - target / 20; /* 5% for the cache's rounding and fragments */
    if (usable > fixed && n->forward_bytes > fixed) {
        uint64_t k = (n->forward_bytes - fixed + (usable - fixed) - 1) / (usable - fixed);
        if (k >= 2) {
            uint64_t pred = fixed + (n->forward_bytes - fixed) / k;
            snprintf(act, sizeof act, "divide the micro-batch by %llu (at least) and accumulate gradients over %llu "
                     "micro-batches, so the global batch stays", (unsigned long long)k, (unsigned long long)k);
            snprintf(eff, sizeof eff, "the forward through its last layer needs about %s instead of %s, under %s",
                     iec(pred, a, sizeof a), iec(n->forward_bytes, b, sizeof b), under);
            advise(x, 1, 1, 0, act, eff, NULL,
                   check_of(OD_CHECK_ARITHMETIC, -1, pred, 0,
                            "estimated from the trace: %s scale with the micro-batch (%s kept per layer x %zu layers, "
                            "and what the forward keeps before them), %s do not (parameters, optimizer state, "
                            "workspaces); the logits and the loss come on top",
                            iec(n->forward_bytes - fixed, a, sizeof a), iec(n->per_layer_bytes, b, sizeof b),
                            n->layers_total, iec(fixed, e, sizeof e)));
        }
    }
    if (n->ckpt_bytes < n->forward_bytes) {
        snprintf(eff, sizeof eff, "each layer keeps its %s input instead of %s: about %s through the last layer, "
                 "under %s%s", iec(n->layer_input_bytes, a, sizeof a), iec(n->per_layer_bytes, b, sizeof b),
                 iec(n->ckpt_bytes, e, sizeof e), under, n->ckpt_bytes <= target ? "" : " (still more than it)");
        advise(x, 1, 1, 0.5, "activation checkpointing (model.gradient_checkpointing_enable() for a transformers "
                             "model; torch.utils.checkpoint around each layer otherwise)", eff, NULL,
               check_of(OD_CHECK_ARITHMETIC, n->ckpt_bytes > target ? 0 : -1, n->ckpt_bytes, 0,
                        "estimated from the trace: %zu layers, each recomputed in backward; about a third more "
                        "compute; the logits and the loss come on top", n->layers_total));
    }
}

/* Recipe changes sized by the planner under a target: the largest micro-batch with the
 * accumulation that keeps the global batch, then the mitigations that fit, cheapest
 * compute first; sharding last. */
static void recipe_items(rx *x, uint64_t target, int is_cap, const char *under)
{
    if (!x->o || !x->o->model || !x->o->workload || !target)
        return;
    od_plan *pl = malloc(sizeof *pl);
    if (!pl)
        return;
    od_gpu g;
    od_gpu_custom(target, &g);
    if (is_cap) {
        /* A per-process cap bounds the caching allocator's reserve; the CUDA context
         * lies outside it. As a device, the cap is that much larger. */
        target += g.context_bytes;
        od_gpu_custom(target, &g);
    }
    if (od_plan_compute(x->o->model, x->o->workload, &g, pl, NULL) != OD_OK) {
        free(pl);
        return;
    }
    char a[32], b[32], act[480], eff[480], cmd[480], fl[256];
    const od_workload *w = x->o->workload;
    if (w->task == OD_TASK_TRAIN && pl->max_batch && pl->max_batch < w->batch) {
        /* The largest micro-batch that fits with the accumulation that keeps the global
         * batch (accumulating keeps the gradients between micro-steps, so it can need a
         * smaller micro-batch than the plain search found). */
        od_workload w2 = *w;
        uint64_t global = w->batch * (w->grad_accum ? w->grad_accum : 1);
        od_estimate e;
        uint64_t dev = 0;
        int fits = 0, ok = 1;
        uint64_t inexact = 0;
        /* Prefer a micro-batch that divides the global batch (the same global batch
         * exactly); else the largest that fits, with the accumulation rounded up. */
        for (uint64_t mb = pl->max_batch; mb >= 1 && ok && !(fits && global % w2.batch == 0); mb--) {
            w2.batch = mb;
            w2.grad_accum = (global + mb - 1) / mb;
            ok = od_plan_fits(x->o->model, &w2, &g, &dev, &fits, NULL) == OD_OK;
            if (ok && fits && !inexact)
                inexact = mb;
            if (global % mb != 0)
                fits = 0;
        }
        if (ok && !fits && inexact) {
            w2.batch = inexact;
            w2.grad_accum = (global + inexact - 1) / inexact;
            ok = od_plan_fits(x->o->model, &w2, &g, &dev, &fits, NULL) == OD_OK;
        }
        if (ok && od_estimate_compute(x->o->model, &w2, &e, NULL) == OD_OK) {
            od_plan_workload_flags(&w2, fl, sizeof fl);
            snprintf(act, sizeof act, "micro-batch %llu with gradient accumulation %llu (global batch %llu%s)",
                     (unsigned long long)w2.batch, (unsigned long long)w2.grad_accum,
                     (unsigned long long)(w2.batch * w2.grad_accum),
                     w2.batch * w2.grad_accum == global ? ", as now" : ", about as now");
            snprintf(eff, sizeof eff, "peak %s allocated, %s reserved, under %s", iec(e.peak_allocated_bytes, a, sizeof a),
                     iec(e.peak_reserved_bytes, b, sizeof b), under);
            snprintf(cmd, sizeof cmd, "oomdoc plan --config %s %s --memory %llu", x->cfg, fl, (unsigned long long)target);
            advise(x, 1, 3, 3, act, eff, cmd,
                   check_of(OD_CHECK_PLAN, fits, e.peak_allocated_bytes, 0,
                            "planned: %llu is the largest micro-batch that fits %s%s", (unsigned long long)w2.batch,
                            under, global % w2.batch == 0 ? " and divides the global batch" : ""));
        }
    }
    if (pl->fits) {
        /* The plan says the step as given fits: the OOM came from something the plan does
         * not see. Sizing changes against it would be guesses. */
        od_plan_workload_flags(w, fl, sizeof fl);
        evid(x->d, OD_NO_INPUT, "plan_fits", (double)pl->device_memory_bytes,
             "the plan of %s (%s) fits %s (%s on the device): the OOM comes from something it does not model -- "
             "a larger batch or sequence than given, another process, or memory outside the step",
             x->cfg, fl, under, iec(pl->device_memory_bytes, a, sizeof a));
        free(pl);
        return;
    }
    int n_shard = 0;
    /* The smallest device of the table that fits the step as it is. */
    for (size_t i = 0; od_gpu_by_memory(i); i++) {
        const od_gpu *gg = od_gpu_by_memory(i);
        uint64_t dev = 0;
        int fits = 0;
        int bf16 = w->precision == OD_PREC_AMP_BF16 || w->precision == OD_PREC_BF16 || w->precision == OD_PREC_MIXED_BF16;
        if (gg->memory_bytes <= target || (bf16 && !gg->bf16) ||
            od_plan_fits(x->o->model, w, gg, &dev, &fits, NULL) != OD_OK || !fits)
            continue; /* too small, without bf16 for a bf16 recipe, or the step does not fit it */
        od_plan_workload_flags(w, fl, sizeof fl);
        snprintf(act, sizeof act, "or a GPU with more memory: the smallest that fits the step as it is is the %s",
                 gg->description);
        snprintf(eff, sizeof eff, "%s on its %s", iec(dev, a, sizeof a), iec(gg->memory_bytes, b, sizeof b));
        snprintf(cmd, sizeof cmd, "oomdoc plan --config %s %s --gpu %s", x->cfg, fl, gg->name);
        advise(x, 0, 4, 100, act, eff, cmd, check_of(OD_CHECK_PLAN, 1, pl->estimate.peak_allocated_bytes, 0,
                                                      "planned on the %s", gg->name));
        break;
    }
    for (size_t i = 0; i < pl->n_mitigations; i++) {
        const od_mitigation *mi = &pl->mitigations[i];
        if (!mi->fits || strcmp(mi->key, "grad-accum") == 0)
            continue;
        int shard = mi->workload.zero || mi->workload.dp > 1 || mi->workload.tp > 1 || mi->workload.pp > 1 ||
                    mi->workload.offload_optimizer;
        if (shard && ++n_shard > 2)
            continue; /* the two cheapest ways to shard are enough to choose from */
        snprintf(eff, sizeof eff, "peak %s allocated, %s on the device (compute: %s%s%s)",
                 iec(mi->peak_allocated_bytes, a, sizeof a), iec(mi->device_memory_bytes, b, sizeof b), mi->overhead,
                 mi->needs[0] ? "; needs " : "", mi->needs);
        snprintf(cmd, sizeof cmd, "oomdoc plan --config %s %s --memory %llu", x->cfg, mi->flags,
                 (unsigned long long)target);
        advise(x, !shard, shard ? 4 : 3, mi->overhead_pct, mi->title, eff, cmd,
               check_of(OD_CHECK_PLAN, 1, mi->peak_allocated_bytes, 0, "planned under %s", under));
    }
    free(pl);
}

/* Allocator settings replayed on the snapshot: each one that avoids the OOM is advised
 * with its measured effect; the others are evidence, with the reason. */
static void setting_items(rx *x)
{
    const od_snapshot_findings *wf = x->sf;
    if (!wf || !wf->whatif_reproduces)
        return;
    char a[32], b[32], c[32], act[480], eff[480], cmd[480];
    /* the settings that fail, one line per reason: the cap exceeded, or no block large enough */
    char tried[3][480] = {"", "", ""}; /* [2]: the trace served, the step's estimated need too large */
    uint64_t lo[2] = {UINT64_MAX, UINT64_MAX}, hi[2] = {0, 0};
    size_t entry[2] = {0, 0};
    int approx = 0;
    char branch[96] = "";
    if (wf->frag_cap_bytes)
        snprintf(branch, sizeof branch, "if the cap is at least %s (then the OOM was fragmentation): ",
                 iec(wf->frag_cap_bytes, a, sizeof a));
    int complete = step_completed(wf);
    const od_step_need *sn = &wf->need;
    /* the run's own setting reproduces the recording up to its OOM (whatif_reproduces): a
     * what-if's figures are the model's exact ones up to there, its prediction after */
    char exactness[96];
    snprintf(exactness, sizeof exactness, "; exact up to entry %zu, a what-if after it", wf->whatifs[0].oom_entry);
    for (size_t k = 1; k < wf->n_whatifs; k++) {
        const od_whatif *w = &wf->whatifs[k];
        snprintf(act, sizeof act, "%sset %s=%s", branch, x->conf, w->setting);
        snprintf(cmd, sizeof cmd, "oomdoc replay %s --capacity %llu --set '%s'", x->snap_arg,
                 (unsigned long long)wf->whatif_cap_bytes, w->setting);
        if (!w->oom && sn->have && sn->forward_bytes > wf->whatif_cap_bytes) {
            /* it serves the trace, which ends at the failure; the rest of the step cannot fit */
            size_t l = strlen(tried[2]);
            snprintf(tried[2] + l, sizeof tried[2] - l, "%s%s", l ? ", " : "", w->setting);
            continue;
        }
        if (w->oom) {
            int why = w->oom_request_bytes + w->oom_allocated_bytes > wf->whatif_cap_bytes ? 0 : 1;
            uint64_t v = why ? w->oom_largest_free_bytes : w->oom_allocated_bytes;
            lo[why] = v < lo[why] ? v : lo[why];
            hi[why] = v > hi[why] ? v : hi[why];
            entry[why] = w->oom_entry;
            approx |= w->approximate;
            size_t l = strlen(tried[why]);
            snprintf(tried[why] + l, sizeof tried[why] - l, "%s%s", l ? ", " : "", w->setting);
        } else {
            snprintf(eff, sizeof eff, "no OOM under the same %s cap: peak reserved %s", iec(wf->whatif_cap_bytes, a, sizeof a),
                     iec(w->peak_reserved_bytes, b, sizeof b));
            advise(x, 1, 1, 1, act, eff, cmd,
                   check_of(OD_CHECK_REPLAY, w->approximate || !complete ? -1 : 1, 0, 0,
                            "the trace replayed under it: no OOM (the run's setting fails at entry %zu)%s%s",
                            wf->whatifs[0].oom_entry,
                            complete ? "" : "; the trace ends at the failure, and the step goes on after it",
                            w->approximate ? exactness : ""));
        }
    }
    if (tried[2][0])
        evid(x->d, wf->input, "tried", 0,
             "tried, replayed under the %s cap: %s=%s -- each serves the requests the trace holds, but it ends in "
             "the first forward, whose need through its last layer is about %s, more than the cap",
             iec(wf->whatif_cap_bytes, a, sizeof a), x->conf, tried[2], iec(sn->forward_bytes, b, sizeof b));
    for (int why = 0; why < 2; why++) {
        if (!tried[why][0])
            continue;
        char range[80];
        if (lo[why] == hi[why])
            snprintf(range, sizeof range, "%s", iec(lo[why], a, sizeof a));
        else
            snprintf(range, sizeof range, "%s to %s", iec(lo[why], a, sizeof a), iec(hi[why], b, sizeof b));
        if (why == 0)
            evid(x->d, wf->input, "tried", 0,
                 "tried, replayed under the %s cap: %s=%s -- none avoids the OOM: each still fails at entry %zu, where "
                 "%s live + the %s request exceed the cap%s",
                 iec(wf->whatif_cap_bytes, c, sizeof c), x->conf, tried[why], entry[why], range,
                 iec(wf->whatifs[0].oom_request_bytes, b, sizeof b), approx ? exactness : "");
        else
            evid(x->d, wf->input, "tried", 0,
                 "tried, replayed under the %s cap: %s=%s -- none avoids the OOM: each still fails at entry %zu, where "
                 "the cap leaves room but the largest free block is %s for the %s request%s",
                 iec(wf->whatif_cap_bytes, c, sizeof c), x->conf, tried[why], entry[why], range,
                 iec(wf->whatifs[0].oom_request_bytes, b, sizeof b), approx ? exactness : "");
    }
}

/* torch.cuda.empty_cache(), only when it gives back at least the missing bytes. */
static void empty_cache_item(rx *x, uint64_t missing)
{
    const od_snapshot_findings *sf = x->sf;
    if (!sf)
        return;
    uint64_t rel = releasable_bytes(sf);
    char a[32], b[32];
    od_check ck = check_of(OD_CHECK_ARITHMETIC, rel >= missing && rel > 0, 0, rel,
                           "just before the OOM, segments with no live block held %s; %s were missing",
                           iec(rel, a, sizeof a),
                           iec(missing, b, sizeof b));
    advise_as(x, 1, 1, 2, OD_ADV_EMPTY_CACHE, NULL, ck);
}

/* Which torch the evidence comes from: the caller's --torch-version, else the OOM
 * message's wording, else the snapshot's layout (a lower bound); said in the evidence. */
static void torch_version(rx *x, const od_diag_options *opts)
{
    od_torch_version v;
    char a[80];
    if (opts && opts->torch_version && od_torch_version_parse(opts->torch_version, &v) == OD_OK) {
        x->ver.lower = x->ver.upper = v;
        x->ver.upper.patch = x->ver.lower.patch = 0;
        x->ver.why = "as given";
        x->have_ver = 1;
        evid(x->d, OD_NO_INPUT, NULL, 0, "torch %s, as given (--torch-version)", od_torch_version_format(v, a, sizeof a));
        return;
    }
    for (size_t i = 0; i < x->n; i++) {
        const od_diag_input *in = &x->ins[i];
        if (in->kind != OD_INPUT_LOG || !in->triage)
            continue;
        for (size_t k = 0; k < in->triage->n_reports; k++) {
            const od_oom_report *r = &in->triage->reports[k];
            if (!r->have_torch_range)
                continue;
            od_torch_range rg = r->torch_range;
            x->ver = rg;
            x->have_ver = 1;
            char span[80];
            od_torch_range_format(&rg, span, sizeof span);
            evid(x->d, i, "torch_version", 0, "%s: torch %s, inferred from the OOM message's wording (%s%s%s)", in->name,
                 span, rg.why, rg.refined ? "; " : "", rg.refined ? rg.refined : "");
            return;
        }
    }
    for (size_t i = 0; i < x->n; i++) {
        const od_snapshot *s = x->ins[i].kind == OD_INPUT_SNAPSHOT ? x->ins[i].snapshot : NULL;
        if (!s)
            continue;
        od_torch_snapshot_keys k;
        memset(&k, 0, sizeof k);
        k.block_history = s->torch_major == 1;
        k.dict_layout = s->torch_major >= 2;
        k.device_traces = s->has_traces;
        k.allocator_settings = s->settings.present;
        k.external_annotations = s->n_annotations > 0;
        for (size_t g = 0; g < s->n_segments && !k.is_expandable; g++)
            k.is_expandable = s->segments[g].is_expandable;
        const char *why = NULL;
        v = od_torch_snapshot_since(&k, &why);
        if (!od_torch_version_known(v))
            continue;
        memset(&x->ver, 0, sizeof x->ver);
        x->ver.lower = v;
        x->ver.why = why;
        x->have_ver = 1;
        evid(x->d, i, NULL, 0, "%s: torch %s, inferred from the snapshot's layout (%s)", x->ins[i].name,
             od_torch_range_format(&x->ver, a, sizeof a), why ? why : "its keys");
        return;
    }
}

/* What to do for the leak: the site's fix with what it frees and the peak it leaves, the usual causes, the practice. */
static void prescribe_leak(rx *x, uint64_t request, int device_had_room)
{
    od_diagnosis *d = x->d;
    const od_oom_report *r = x->r;
    const od_diag_input *ins = x->ins;
    const od_diag_input *from = d->decided_by != OD_NO_INPUT ? &ins[d->decided_by] : NULL;
    char a[32], b[32], buf[480], eff[480], cmd[480];
    (void)r, (void)request, (void)device_had_room;
    const char *per = d->have_growth_per_step ? "step" : "second";
    double g = d->have_growth_per_step ? d->growth_bytes_per_step : d->growth_bytes_per_second;
    iec(clamp_u64(g), a, sizeof a);
    uint64_t total = x->total;
    const od_iterations *it = x->sf ? x->sf->iterations : NULL;
    uint64_t live = it && it->n ? it->items[it->n - 1].live_bytes : 0;
    char steps[160] = "";
    if (total && g > 0 && live && live < total)
        snprintf(steps, sizeof steps, "; at that rate the %s left of the device's %s lasts %.0f more %ss",
                 iec(total - live, b, sizeof b), iec(total, eff, sizeof eff), floor((double)(total - live) / g), per);
    else if (g > 0)
        snprintf(steps, sizeof steps, "; how many %ss until the OOM needs the device's memory (--gpu or --capacity)", per);
    if (d->site[0]) {
        snprintf(buf, sizeof buf,
                 "at %.300s: do not keep its results across iterations (an eval forward without torch.no_grad(), "
                 "a loss tensor appended instead of loss.item())",
                 d->site);
        snprintf(eff, sizeof eff, "the %s per %s that survive from there are freed; memory stays flat", a, per);
        /* What the fix frees: every block the site still holds at the end; what it
         * leaves: the trace's peak without the graphs it keeps (categorize's
         * retained_graphs), which is what the run would have peaked at. */
        uint64_t rel = 0, fixed_peak = 0;
        for (size_t k = 0; it && k < it->n_survivors; k++)
            if (!strcmp(it->survivors[k].site, d->site))
                rel = it->survivors[k].held_at_end_bytes;
        char why[200] = "";
        const od_trace *tr = x->sf ? x->sf->figures->trace : NULL;
        if (tr && tr->n_lives && x->sf->life_categories) {
            uint8_t *drop = malloc(tr->n_lives);
            for (size_t k = 0; drop && k < tr->n_lives; k++)
                drop[k] = x->sf->life_categories[k] == OD_CAT_RETAINED_GRAPHS;
            if (drop)
                fixed_peak = od_trace_peak_without(tr, drop, NULL);
            free(drop);
            char c1[32], c2[32];
            if (fixed_peak)
                snprintf(why, sizeof why, "; without the graphs it keeps the trace peaks at %s (now %s)",
                         iec(fixed_peak, c1, sizeof c1), iec(tr->peak_block_bytes, c2, sizeof c2));
        }
        char c3[32];
        advise(x, 1, 2, 0, buf, eff, NULL,
               check_of(OD_CHECK_ARITHMETIC, 1, fixed_peak, rel, "%s per %s survive, %s still held at the end%s%s",
                        a, per, iec(rel, c3, sizeof c3), why, steps));
    }
    snprintf(eff, sizeof eff, "growth of %s per %s stops; memory stays flat after step 1", a, per);
    advise_as(x, 1, 2, 1, OD_ADV_LEAK_USUAL, NULL,
              check_of(OD_CHECK_NONE, -1, 0, 0, "unchecked: the usual causes; the site above is the measured one"));
    if (x->sf) {
        snprintf(cmd, sizeof cmd, "oomdoc doctor %.199s --fail-on leak", x->snap_arg); /* (fits: 199 at most) */
        advise_as(x, 0, 5, 0, OD_ADV_CI_SNAPSHOT, cmd, check_of(OD_CHECK_NONE, -1, 0, 0, "unchecked: a practice"));
        snprintf(d->verify, sizeof d->verify, "after the fix, record a new snapshot and expect live memory flat "
                 "across iterations");
        snprintf(d->verify_command, sizeof d->verify_command, "oomdoc doctor <new.pickle> --fail-on leak");
    } else {
        char series_arg[200];
        const char *series = shell_arg(from ? from->name : NULL, "<steps.csv>", series_arg, sizeof series_arg);
        advise_as(x, 0, 5, 0, OD_ADV_RECORD_HISTORY, NULL,
                  check_of(OD_CHECK_NONE, -1, 0, 0, "unchecked: a way to find the site"));
        snprintf(d->verify, sizeof d->verify, "after the fix, log the steps again and expect the verdict stable");
        snprintf(d->verify_command, sizeof d->verify_command, "oomdoc trend %s", series);
    }
}

/* What to do for fragmentation or a cap: MPS's watermark; the settings replayed; the cap raised to the step's need; empty_cache(); the recipes under the cap. */
static void prescribe_frag_or_cap(rx *x, uint64_t request, int device_had_room)
{
    od_diagnosis *d = x->d;
    const od_oom_report *r = x->r;
    char a[32], b[32], buf[480];
    if (r && r->framework == OD_FW_PYTORCH_MPS) {
        /* max allowed = ratio x the recommended working set: under the default 1.7, the most
         * (2.0) allows 2.0/1.7 of it. What the driver holds for the process must fit. */
        uint64_t held = (r->have & OD_HAVE_PROCESS) ? r->process_bytes : r->allocated_bytes;
        if ((r->have & OD_HAVE_ALLOWED) && (r->have & OD_HAVE_REQUESTED)) {
            uint64_t raised = (uint64_t)((unsigned __int128)r->allowed_bytes * 20 / 17);
            uint64_t need = held + r->requested_bytes;
            char c2[32];
            advise_as(x, 1, 1, 0, OD_ADV_MPS_WATERMARK, NULL,
                      check_of(OD_CHECK_ARITHMETIC, need <= raised, 0, 0,
                               "the message: if the default 1.7 was in force, 2.0 raises the %s cap to %s, which "
                               "%s the %s needed (what the process holds + the request)",
                               iec(r->allowed_bytes, a, sizeof a), iec(raised, b, sizeof b),
                               need <= raised ? "holds" : "is still short of", iec(need, c2, sizeof c2)));
        } else {
            advise_as(x, 1, 1, 0, OD_ADV_MPS_WATERMARK, NULL,
                      check_of(OD_CHECK_NONE, -1, 0, 0, "unchecked: the message prints no cap"));
        }
        advise_as(x, 1, 3, 0, OD_ADV_MPS_SHRINK, NULL, check_of(OD_CHECK_NONE, -1, 0, 0, "unchecked"));
        snprintf(d->verify, sizeof d->verify, "rerun with PYTORCH_MPS_HIGH_WATERMARK_RATIO=2.0");
        return;
    }
    setting_items(x);
    if (!x->sf || !x->sf->whatif_reproduces) {
        /* No trace to replay: the message's own figures are the check. */
        int torch = !r || r->framework == OD_FW_PYTORCH_CUDA || r->framework == OD_FW_PYTORCH_ROCM;
        if (torch && d->verdict == OD_VERDICT_FRAGMENTATION && r) {
            char c2[32];
            od_advice set[2];
            od_advice_fragmentation(r, set);
            /* never advise what the run's snapshot shows in force */
            int in_force = x->sf && x->ins[x->sf->input].snapshot &&
                           x->ins[x->sf->input].snapshot->settings.expandable_segments;
            if (!in_force || (set[0] != OD_ADV_EXPANDABLE && set[0] != OD_ADV_EXPANDABLE_HIP)) {
                advise_as(x, 1, 1, 1, set[0], NULL,
                          check_of(OD_CHECK_ARITHMETIC, -1, 0, r->reserved_unallocated_bytes,
                                   "the message: %s reserved but unallocated + %s headroom hold the %s request, in pieces; "
                                   "replay a snapshot to see whether growing segments serve it",
                                   iec(r->reserved_unallocated_bytes, a, sizeof a), iec(r->headroom_bytes, b, sizeof b),
                                   iec(r->requested_bytes, c2, sizeof c2)));
            }
            advise_as(x, 1, 1, 2, set[1], NULL,
                      check_of(OD_CHECK_NONE, -1, 0, 0,
                               set[1] == OD_ADV_MAX_SPLIT || set[1] == OD_ADV_MAX_SPLIT_HIP
                                   ? "unchecked without a snapshot: the message's own hint for fragmentation"
                                   : "unchecked without a snapshot: large blocks kept whole, cached ones "
                                     "reclaimed before the cache fills"));
        }
    }
    if (device_had_room && x->cap)
        cap_item(x);
    if (x->cap && request) {
        uint64_t in_use = r ? r->allocated_bytes + r->reserved_unallocated_bytes : x->sf ? x->sf->oom_reserved_bytes : 0;
        uint64_t room = x->cap > in_use ? x->cap - in_use : 0;
        empty_cache_item(x, request > room ? request - room : 0);
    }
    if (x->cap) {
        snprintf(buf, sizeof buf, "the %s cap", iec(x->cap, a, sizeof a));
        recipe_items(x, x->cap, 1, buf);
        trace_recipe_items(x, x->cap, buf);
    }
    if (d->verdict == OD_VERDICT_FRAGMENTATION)
        advise_as(x, 0, 5, 0, OD_ADV_SHAPES_FIXED, NULL, check_of(OD_CHECK_NONE, -1, 0, 0, "unchecked: depends on the program"));
    if ((!x->o || !x->o->model) && x->cap)
        advise(x, 0, 5, 1, "size the cap from a plan of the whole step", "the cap matches what the job needs",
               "oomdoc plan --config <config.json>",
               check_of(OD_CHECK_NONE, -1, 0, 0, "run it with the job's batch and sequence length"));
    else if (!x->o || !x->o->model) /* no cap to size: what fits, before the next launch */
        advise_as(x, 0, 5, 1, OD_ADV_PLAN_FIRST, NULL,
                  check_of(OD_CHECK_NONE, -1, 0, 0, "run it with the job's batch and sequence length"));
    if (x->sf) {
        snprintf(d->verify, sizeof d->verify, "after the change, record a new snapshot and expect no OOM");
        snprintf(d->verify_command, sizeof d->verify_command, "oomdoc doctor <new.pickle>");
    } else if (x->log_name) {
        snprintf(d->verify, sizeof d->verify, "rerun, and expect no OOM report in the new log");
        snprintf(d->verify_command, sizeof d->verify_command, "oomdoc triage <new.log>");
    }
}

/* What to do for memory held outside the job: the ranks' contexts, the processes to stop, another GPU. */
static void prescribe_other_processes(rx *x, uint64_t request, int device_had_room)
{
    od_diagnosis *d = x->d;
    const od_oom_report *r = x->r;
        char a[32], b[32], buf[480];
    (void)device_had_room;
    char pids[200] = "", c[32];
    size_t o = 0;
    size_t listed = 0;
    for (; r && listed < r->n_other && o < sizeof pids - 48; listed++)
        o += (size_t)snprintf(pids + o, sizeof pids - o, "%s%llu (%s)", listed ? ", " : "",
                              (unsigned long long)r->other[listed].pid, iec(r->other[listed].bytes, a, sizeof a));
    if (r && listed < r->n_other)
        o += (size_t)snprintf(pids + o, sizeof pids - o, " and %zu more", r->n_other - listed);
    const od_advice_text *st = od_advice_get(OD_ADV_STOP_OTHERS);
    snprintf(buf, sizeof buf, "%s%s%s", st->action, o ? ": " : "", pids);
    if (r && r->stray_contexts)
        advise_as(x, 1, 1, 0, OD_ADV_RANK_CONTEXTS, NULL,
                  check_of(OD_CHECK_ARITHMETIC, r->free_bytes + r->others_bytes >= r->requested_bytes, 0,
                           r->others_bytes, "the message: %zu processes hold %s between them, %s free with them "
                           "gone for the %s request", r->n_other, iec(r->others_bytes, a, sizeof a),
                           iec(r->free_bytes + r->others_bytes, b, sizeof b),
                           iec(r->requested_bytes, c, sizeof c)));
    if (r && r->elsewhere_dominates)
        /* what held it is more than the job: freed, the device has the request free */
        advise(x, 1, 1, 1, buf, st->effect, st->command,
               check_of(OD_CHECK_ARITHMETIC, r->free_bytes + r->held_elsewhere_bytes >= r->requested_bytes, 0,
                        r->held_elsewhere_bytes, "the message: %s is held outside this job; freed, %s is free for "
                        "the %s request", iec(r->held_elsewhere_bytes, a, sizeof a),
                        iec(r->free_bytes + r->held_elsewhere_bytes, b, sizeof b),
                        iec(r->requested_bytes, c, sizeof c)));
    else if (r)
        advise(x, 1, 1, 0, buf, st->effect, st->command,
               check_of(OD_CHECK_ARITHMETIC, r->others_bytes >= r->missing_bytes, 0, r->others_bytes,
                        "they hold %s; %s were missing", iec(r->others_bytes, a, sizeof a),
                        iec(r->missing_bytes, b, sizeof b)));
    advise_as(x, 1, 1, 1, OD_ADV_OTHER_GPU, NULL,
              check_of(OD_CHECK_NONE, -1, 0, 0, "unchecked: oomdoc gpus lists each GPU's free memory"));
    advise_as(x, 0, 5, 0, OD_ADV_EXCLUSIVE, NULL, check_of(OD_CHECK_NONE, -1, 0, 0, "a practice"));
    snprintf(d->verify, sizeof d->verify, "expect no other process on the GPU");
    snprintf(d->verify_command, sizeof d->verify_command, "oomdoc gpus");
}

/* What to do for the device is too small for the step: the recipes that fit it. */
static void prescribe_capacity(rx *x, uint64_t request, int device_had_room)
{
    od_diagnosis *d = x->d;
    const od_oom_report *r = x->r;
        char a[32], buf[480];
    (void)r, (void)request, (void)device_had_room;
    uint64_t target = x->total ? x->total : x->cap;
    if (target) {
        snprintf(buf, sizeof buf, "the device's %s", iec(target, a, sizeof a));
        recipe_items(x, target, 0, buf);
        trace_recipe_items(x, target, buf);
    }
    if (!x->o || !x->o->model) {
        advise_as(x, 1, 3, 50, OD_ADV_SHRINK_STEP, NULL,
                  check_of(OD_CHECK_NONE, -1, 0, 0, "unchecked: give --config and the plan flags to size each change"));
    }
    advise_as(x, 0, 5, 0, OD_ADV_PLAN_FIRST, NULL, check_of(OD_CHECK_NONE, -1, 0, 0, "a practice"));
    snprintf(d->verify, sizeof d->verify, "size the step first, with the job's --batch and --seq");
    snprintf(d->verify_command, sizeof d->verify_command, "oomdoc plan --config <config.json>");
}

/* What to do for the cause cannot be told: what to gather. */
static void prescribe_unknown(rx *x, uint64_t request, int device_had_room)
{
    od_diagnosis *d = x->d;
    const od_oom_report *r = x->r;
    const od_diag_input *ins = x->ins;
    size_t n_ins = x->n;
    (void)request, (void)device_had_room;
    /* Without a report, JAX figures say the job is JAX's: a torch snapshot is no use. */
    int jax = r ? r->framework == OD_FW_JAX : inputs_are_jax(ins, n_ins);
    int torch = !jax && (!r || r->framework == OD_FW_PYTORCH_CUDA || r->framework == OD_FW_PYTORCH_ROCM);
    if (r && r->free_exceeds_request) {
        /* the figures are not the state at the failure: a snapshot of the pool would not show it */
        advise_as(x, 1, 1, 0, r->framework == OD_FW_PYTORCH_ROCM ? OD_ADV_FREE_RACE_HIP : OD_ADV_FREE_RACE, NULL,
                  check_of(OD_CHECK_NONE, -1, 0, 0, "unchecked: gathers what the message could not show"));
        advise_as(x, 0, 5, 0, OD_ADV_EXCLUSIVE, NULL, check_of(OD_CHECK_NONE, -1, 0, 0, "a practice"));
        snprintf(d->verify, sizeof d->verify, "rerun under the watch: its series shows the memory in use when it "
                 "fails");
        return;
    }
    if (torch)
        advise_as(x, 1, 5, 0, OD_ADV_TORCH_SNAPSHOT, NULL,
                  check_of(OD_CHECK_NONE, -1, 0, 0, "unchecked: gathers what is missing"));
    if (jax && !r)
        advise_as(x, 1, 5, 0, OD_ADV_JAX_PROFILE, NULL,
                  check_of(OD_CHECK_NONE, -1, 0, 0, "unchecked: gathers what is missing"));
    if (jax)
        advise_as(x, 1, 5, 1, OD_ADV_JAX_PREALLOC, NULL,
                  check_of(OD_CHECK_NONE, -1, 0, 0, "unchecked: no model of XLA's allocator"));
    if (r && r->framework == OD_FW_TENSORFLOW) {
        advise_as(x, 1, 5, 1, OD_ADV_TF_GROWTH, NULL, check_of(OD_CHECK_NONE, -1, 0, 0, "unchecked: no model of TF's allocator"));
        advise_as(x, 1, 5, 2, OD_ADV_TF_ASYNC, NULL, check_of(OD_CHECK_NONE, -1, 0, 0, "unchecked: no model of TF's allocator"));
    }
    if (torch) {
        snprintf(d->verify, sizeof d->verify, "run doctor on the snapshot");
        snprintf(d->verify_command, sizeof d->verify_command, "oomdoc doctor <oom.pickle>");
    } else if (jax && !r) {
        snprintf(d->verify, sizeof d->verify, "run doctor on the device memory profile");
        snprintf(d->verify_command, sizeof d->verify_command, "oomdoc doctor <memory.prof>");
    } else {
        snprintf(d->verify, sizeof d->verify, "rerun with the change, and triage the new log");
        snprintf(d->verify_command, sizeof d->verify_command, "oomdoc triage <new.log>");
    }
}

/* What to do for no OOM and no leak: the KV cache to turn on, a profiled run's peak to lower. */
static void prescribe_healthy(rx *x, uint64_t request, int device_had_room)
{
    od_diagnosis *d = x->d;
    const od_oom_report *r = x->r;
    const od_diag_input *ins = x->ins;
    size_t n_ins = x->n;
    char a[32], eff[480];
    (void)r, (void)request, (void)device_had_room;
    snprintf(d->verify, sizeof d->verify, "nothing to fix");
    for (size_t i = 0; i < d->n_snapshots; i++)
        if (d->snapshots[i].inference.recomputes_each_step) {
            snprintf(eff, sizeof eff,
                     "each decode step runs one new position instead of the whole sequence (%.1fx more work by the "
                     "last step now); memory grows by the cache, which oomdoc plan --task infer --kv-cache dynamic "
                     "sizes",
                     d->snapshots[i].inference.step_growth_ratio);
            char kv[480];
            if (x->o && x->o->workload && x->o->workload->task == OD_TASK_INFER)
                snprintf(kv, sizeof kv, "oomdoc plan --config %s --task infer --batch %llu --prompt %llu "
                         "--new-tokens %llu --kv-cache dynamic", x->cfg, (unsigned long long)x->o->workload->batch,
                         (unsigned long long)x->o->workload->prompt, (unsigned long long)x->o->workload->new_tokens);
            else
                snprintf(kv, sizeof kv, "oomdoc plan --config %s --task infer --kv-cache dynamic", x->cfg);
            advise(x, 0, 3, 0, "turn the KV cache on: model.generation_config.use_cache = True (generate() "
                               "recomputes the sequence at every step without it)",
                   eff, kv, check_of(OD_CHECK_NONE, -1, 0, 0, "unchecked here: the plan command sizes the cache"));
            break;
        }
    /* A profiled run: how to lower its peak, by the phase it falls in. */
    for (size_t i = 0; ins && i < n_ins; i++) {
        const od_profile *p = ins[i].kind == OD_INPUT_PROFILE ? ins[i].profile : NULL;
        if (!p || p->kind != OD_PROFILE_TORCH_TRACE || !p->n_spans || !p->n_points)
            continue;
        const char *top = p->ops_at_peak.n ? p->ops_at_peak.v[0].name : "?";
        iec(p->peak_allocated_bytes, a, sizeof a);
        if (p->peak_phase == OD_PHASE_BACKWARD || p->peak_phase == OD_PHASE_FORWARD) {
            snprintf(eff, sizeof eff, "the %s peak falls in %s, where activations kept for backward are live "
                     "(largest at the peak: %.200s)", a, od_phase_name(p->peak_phase), top);
            advise(x, 0, 5, 0, "to lower the peak: activation checkpointing or a smaller micro-batch with gradient "
                               "accumulation; for a large vocabulary, a chunked or fused cross-entropy",
                   eff, NULL, check_of(OD_CHECK_NONE, -1, 0, 0, "unchecked: give --config to size each change"));
        } else if (p->peak_phase == OD_PHASE_OPTIMIZER) {
            snprintf(eff, sizeof eff, "the %s peak falls in the optimizer step (largest at the peak: %.200s)", a, top);
            advise(x, 0, 5, 0, "to lower the peak: a fused optimizer, foreach=False, or an 8-bit / sharded optimizer "
                               "state",
                   eff, NULL, check_of(OD_CHECK_NONE, -1, 0, 0, "unchecked: give --config to size each change"));
        }
        snprintf(d->verify, sizeof d->verify, "nothing to fix; after a change, compare the peak (%s now)", a);
        snprintf(d->verify_command, sizeof d->verify_command, "oomdoc profile <new_trace.json.gz>");
        break;
    }
}

static void prescribe(od_diagnosis *d, const od_diag_input *ins, size_t n_ins, const od_diag_options *opts)
{
    od_diag_options effective;
    if (opts && d->have_workload) { /* the plan the snapshots were compared with */
        effective = *opts;
        effective.workload = &d->workload;
        opts = &effective;
    }
    rx x0, *x = &x0;
    memset(x, 0, sizeof *x);
    x->d = d;
    x->ins = ins;
    x->n = n_ins;
    x->o = opts;
    x->r = d->report;
    const od_diag_input *from = d->decided_by != OD_NO_INPUT ? &ins[d->decided_by] : NULL;
    x->log_name = from && from->kind == OD_INPUT_LOG ? from->name : NULL;
    for (size_t i = 0; i < d->n_snapshots && !x->sf; i++)
        if (d->snapshots[i].verdict == d->verdict && (d->snapshots[i].have_oom || d->verdict == OD_VERDICT_LEAK))
            x->sf = &d->snapshots[i];
    if (!x->sf)
        for (size_t i = 0; i < d->n_snapshots && !x->sf; i++)
            if (d->snapshots[i].have_oom)
                x->sf = &d->snapshots[i];
    x->snap_name = x->sf ? ins[x->sf->input].name : NULL;
    const od_oom_report *r = x->r;
    x->conf = r && r->framework == OD_FW_PYTORCH_ROCM ? "PYTORCH_HIP_ALLOC_CONF" : "PYTORCH_CUDA_ALLOC_CONF";
    torch_version(x, opts);
    x->cfg = shell_arg(opts ? opts->config_path : NULL, "<config.json>", x->cfg_arg, sizeof x->cfg_arg);
    shell_arg(x->snap_name, "<snapshot.pickle>", x->snap_arg, sizeof x->snap_arg);
    /* The cap and the device: the caller's flags, else the message, else the trace. */
    if (opts && opts->cap_bytes) {
        x->cap = opts->cap_bytes;
        x->cap_source = "as given";
    } else if (r && (r->have & OD_HAVE_ALLOWED) && r->allowed_bytes) {
        x->cap = r->allowed_bytes;
        x->cap_source = "from the OOM message";
    } else if (x->sf && x->sf->whatif_cap_bytes && !x->sf->frag_cap_bytes) {
        x->cap = x->sf->whatif_cap_bytes;
        x->cap_source = x->sf->whatif_cap_source;
    } else if (x->sf) {
        x->cap = x->sf->max_reserved_bytes;
        x->cap_source = "the most ever reserved: a lower bound";
    }
    x->total = d->device_total_bytes;
    /* Did the device itself have room (so a cap, not the device, was the limit)? */
    uint64_t request = r ? r->requested_bytes : x->sf ? x->sf->oom_request_bytes : 0;
    int device_had_room = (r && (r->have & OD_HAVE_FREE) && r->free_bytes >= request && request) ||
                          (x->sf && x->sf->have_oom && x->sf->oom_device_free_bytes >= x->sf->oom_request_bytes);
    /* A report from outside PyTorch's caching allocator (the host, vLLM, a library, XLA,
     * TF, JAX) takes the remedies its own knobs give, unchecked: no model of those. */
    int torch_report = !r || r->framework == OD_FW_PYTORCH_CUDA || r->framework == OD_FW_PYTORCH_ROCM ||
                       r->framework == OD_FW_PYTORCH_MPS;
    if (r && !x->sf && (!torch_report || d->verdict == OD_VERDICT_HOST_MEMORY)) {
        od_advice h[8];
        size_t nh = od_advice_for_report(r, h, 8);
        for (size_t i = 0; i < nh; i++)
            advise_as(x, 1, 5, (double)i, h[i], NULL,
                      check_of(OD_CHECK_NONE, -1, 0, 0, "unchecked: oomdoc has no model of this allocator"));
        if (d->verdict == OD_VERDICT_HOST_MEMORY) {
            snprintf(d->verify, sizeof d->verify, "rerun, and expect no OOM report in the new log");
            snprintf(d->verify_command, sizeof d->verify_command, "oomdoc triage <new.log>");
        }
        if (nh || d->verdict == OD_VERDICT_HOST_MEMORY) {
            rank_remedies(d->do_now, d->n_do_now);
            rank_remedies(d->long_term, d->n_long_term);
            if (!d->verify[0]) {
                snprintf(d->verify, sizeof d->verify, "rerun with the change, and triage the new log");
                snprintf(d->verify_command, sizeof d->verify_command, "oomdoc triage <new.log>");
            }
            return;
        }
    }
    switch (d->verdict) {
    case OD_VERDICT_HOST_MEMORY:
        break;
    case OD_VERDICT_LEAK:
        prescribe_leak(x, request, device_had_room);
        break;
    case OD_VERDICT_FRAGMENTATION:
    case OD_VERDICT_CAP_LIMIT:
        prescribe_frag_or_cap(x, request, device_had_room);
        break;
    case OD_VERDICT_OTHER_PROCESSES:
        prescribe_other_processes(x, request, device_had_room);
        break;
    case OD_VERDICT_CAPACITY:
        prescribe_capacity(x, request, device_had_room);
        break;
    case OD_VERDICT_UNKNOWN:
        prescribe_unknown(x, request, device_had_room);
        break;
    case OD_VERDICT_HEALTHY:
    case OD_VERDICT_COUNT:
        prescribe_healthy(x, request, device_had_room);
        break;
    }
    rank_remedies(d->do_now, d->n_do_now);
    rank_remedies(d->long_term, d->n_long_term);
}

/* ---------- the whole ---------- */

/* The device's memory: the caller's, else the deciding OOM report's total capacity, else
 * nvidia-smi's total of the GPU the report names (or of the only GPU listed). */
static void find_device(od_diagnosis *d, const od_diag_input *ins, size_t n, const od_diag_options *opts)
{
    const od_oom_report *r = d->report;
    if (opts && opts->device_total_bytes) {
        d->device_total_bytes = opts->device_total_bytes;
        d->device_total_source = "as given";
    } else if (r && (r->have & OD_HAVE_CAPACITY) && r->capacity_bytes) {
        d->device_total_bytes = r->capacity_bytes;
        d->device_total_source = "the OOM message";
    }
    for (size_t i = 0; i < n; i++) {
        const od_triage *t = ins[i].kind == OD_INPUT_LOG ? ins[i].triage : NULL;
        for (size_t k = 0; t && k < t->n_gpus; k++) {
            const od_smi_gpu *g = &t->gpus[k];
            int wanted = r && (r->have & OD_HAVE_DEVICE) ? g->index == r->device : t->n_gpus == 1;
            if (!wanted || !g->total_bytes)
                continue;
            if (!d->device_name[0])
                snprintf(d->device_name, sizeof d->device_name, "%s", g->name);
            if (!d->device_total_bytes) {
                d->device_total_bytes = g->total_bytes;
                d->device_total_source = "nvidia-smi";
            }
        }
    }
}

od_status od_diagnose_loaded(const od_loaded *ins, size_t n, const od_diag_request *rq, od_diagnosis **out,
                             size_t *bad_input, od_error *err)
{
    *out = NULL;
    *bad_input = OD_NO_INPUT;
    int any_snap = 0, have_cfg = 0;
    for (size_t i = 0; i < n; i++) {
        any_snap |= ins[i].kind == OD_INPUT_SNAPSHOT;
        have_cfg |= ins[i].kind == OD_INPUT_CONFIG;
    }
    if (rq && rq->config_input != OD_NO_INPUT && rq->config_input < n &&
        ins[rq->config_input].kind != OD_INPUT_CONFIG) {
        *bad_input = rq->config_input;
        return od_fail(err, OD_ERR_FORMAT, "--config: not a model config.json (no model_type and hidden size)");
    }
    if (rq && rq->plan_flags && !have_cfg)
        return od_fail(err, OD_ERR_ARG, "plan flags (--batch, --seq, ...) need a config.json (--config FILE)");
    od_diag_input *di = calloc(n ? n : 1, sizeof *di);
    if (!di)
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    od_workload defaults;
    od_workload_defaults(&defaults);
    od_diag_options o;
    memset(&o, 0, sizeof o);
    if (rq)
        o = rq->opts;
    od_status st = OD_OK;
    for (size_t i = 0; i < n && st == OD_OK; i++) {
        const od_loaded *l = &ins[i];
        di[i] = (od_diag_input){l->name, l->kind, l->triage, l->series, l->have_fit ? &l->fit : NULL, l->snapshot,
                                NULL, l->profile};
        if (l->kind != OD_INPUT_CONFIG)
            continue;
        if (!l->have_model) {
            /* listed only, unless the plan of it is needed */
            if (any_snap || (rq && rq->plan_flags)) {
                *bad_input = i;
                st = od_fail(err, OD_ERR_FORMAT, "the planner cannot read this config.json: %s", l->model_error);
            }
        } else if (!o.model) {
            o.model = &l->model;
            o.workload = rq && rq->workload ? rq->workload : &defaults;
            o.config_path = l->name;
        }
    }
    if (st == OD_OK)
        st = od_diagnose_with(di, n, &o, out, err);
    free(di);
    return st;
}

/* The plan the snapshots are compared with: an input's own estimate (the caller made it),
 * else the model's under the caller's workload, a generate() trace making it an inference
 * plan (its decode steps the new tokens) unless the caller said the task. Returns the
 * estimate (in *mine when made here) and in *from the config input it comes from. */
static od_status plan_to_compare(od_diagnosis *d, const od_diag_input *ins, size_t n, const od_diag_options *opts,
                                 od_estimate *mine, const od_estimate **out, size_t *from, od_error *err)
{
    *out = NULL;
    *from = OD_NO_INPUT;
    for (size_t i = 0; i < n; i++)
        if (ins[i].kind == OD_INPUT_CONFIG && ins[i].expected) {
            *out = ins[i].expected;
            *from = i;
            return OD_OK;
        }
    if (!opts || !opts->model || !opts->workload || !d->n_snapshots)
        return OD_OK;
    od_workload w = *opts->workload;
    for (size_t k = 0; k < d->n_snapshots && !opts->task_given; k++) {
        const od_inference *inf = &d->snapshots[k].inference;
        if (!inf->is_inference)
            continue;
        w.task = OD_TASK_INFER;
        if (!opts->new_tokens_given && inf->decode_steps)
            w.new_tokens = inf->decode_steps;
        if (inf->recomputes_each_step && w.kv_cache == OD_KV_DYNAMIC)
            w.kv_cache = OD_KV_NONE;
    }
    od_status st = od_estimate_compute(opts->model, &w, mine, err);
    if (st != OD_OK)
        return st;
    d->have_workload = 1;
    d->workload = w;
    *out = mine;
    for (size_t i = 0; i < n && *from == OD_NO_INPUT; i++)
        if (ins[i].kind == OD_INPUT_CONFIG && opts->config_path && ins[i].name == opts->config_path)
            *from = i;
    return OD_OK;
}

/* The verdict and what decided it. A leak outranks the OOM it ends in: a snapshot's first
 * (it names the site), then a series', then a profile's; then the last OOM report; then a
 * snapshot's own OOM. Returns 1 when something decided, 0 when nothing did. */
static int decide_verdict(od_diagnosis *d, const od_diag_input *ins, size_t n)
{
    int decided = 0;
    /* A leak outranks the OOM it ends in: a snapshot's first (it names the site), then a
     * series'. */
    for (size_t i = 0; i < d->n_snapshots && !decided; i++) {
        const od_snapshot_findings *f = &d->snapshots[i];
        if (f->verdict != OD_VERDICT_LEAK)
            continue;
        d->verdict = OD_VERDICT_LEAK;
        d->decided_by = f->input;
        d->have_growth_per_step = 1;
        d->growth_bytes_per_step = f->iterations->fit.growth_per_x;
        for (size_t k = 0; k < f->iterations->n_survivors; k++)
            if (f->iterations->survivors[k].bytes_per_iteration) {
                snprintf(d->site, sizeof d->site, "%s", f->iterations->survivors[k].site);
                break;
            }
        decided = 1;
    }
    for (size_t i = 0; i < n && !decided; i++)
        if (ins[i].kind == OD_INPUT_SERIES && ins[i].fit && ins[i].fit->verdict == OD_TREND_LEAK) {
            d->verdict = OD_VERDICT_LEAK;
            d->decided_by = i;
            if (ins[i].series->time_indexed) {
                d->have_growth_per_second = 1;
                d->growth_bytes_per_second = ins[i].fit->growth_per_x;
            } else {
                d->have_growth_per_step = 1;
                d->growth_bytes_per_step = ins[i].fit->growth_per_x;
            }
            decided = 1;
        }
    for (size_t i = 0; i < n && !decided; i++) {
        od_trend_fit pf;
        if (ins[i].kind == OD_INPUT_PROFILE && profile_fit(ins[i].profile, &pf) && pf.verdict == OD_TREND_LEAK) {
            d->verdict = OD_VERDICT_LEAK;
            d->decided_by = i;
            d->have_growth_per_step = 1;
            d->growth_bytes_per_step = pf.growth_per_x;
            decided = 1;
        }
    }
    for (size_t i = n; !decided && i-- > 0;)
        if (ins[i].kind == OD_INPUT_LOG && ins[i].triage && ins[i].triage->n_reports) {
            d->report = &ins[i].triage->reports[ins[i].triage->n_reports - 1];
            d->verdict = from_oom(d->report->verdict);
            d->decided_by = i;
            decided = 1;
        }
    for (size_t i = d->n_snapshots; !decided && i-- > 0;)
        if (d->snapshots[i].have_oom) {
            d->verdict = d->snapshots[i].verdict;
            d->decided_by = d->snapshots[i].input;
            decided = 1;
        }
    return decided;
}

/* The evidence of every input, in input order. Returns whether any input held data. */
static int evidence_of_inputs(od_diagnosis *d, const od_diag_input *ins, size_t n, const od_diag_options *opts)
{
    int any_data = 0;
    for (size_t i = 0; i < n; i++)
        d->have_message |= ins[i].kind == OD_INPUT_LOG && ins[i].triage && ins[i].triage->n_reports;
    for (size_t i = 0; i < n; i++) {
        const od_diag_input *in = &ins[i];
        switch (in->kind) {
        case OD_INPUT_LOG:
            evidence_from_log(d, in, i);
            any_data = 1;
            break;
        case OD_INPUT_SERIES:
            if (in->fit) {
                evidence_from_series(d, in, i);
                any_data = 1;
            } else {
                evid(d, i, NULL, 0, "%s: a memory series too short for a trend", in->name);
            }
            break;
        case OD_INPUT_SNAPSHOT:
            for (size_t k = 0; k < d->n_snapshots; k++)
                if (d->snapshots[k].input == i) {
                    if (detailed_snapshot(d, k))
                        evidence_from_snapshot(d, in, i, &d->snapshots[k]);
                    any_data = 1;
                }
            break;
        case OD_INPUT_CONFIG:
            if (!(in->expected || (opts && opts->model && opts->config_path == in->name)) || !d->n_snapshots) {
                char arg[200];
                evid(d, i, NULL, 0, "%s: a model config.json: estimate with oomdoc plan --config %s%s", in->name,
                     shell_arg(in->name, "<config.json>", arg, sizeof arg),
                     d->n_snapshots ? "" : " (with a snapshot, doctor compares the plan with it)");
            }
            break;
        case OD_INPUT_PROFILE:
            if (in->profile) {
                evidence_from_profile(d, in, i);
                od_trend_fit pf;
                if (profile_fit(in->profile, &pf))
                    evid(d, i, "growth_bytes_per_step", pf.growth_per_x,
                         "%s: allocated after each optimizer step: %s (Theil-Sen over %zu steps)", in->name,
                         od_trend_verdict_name(pf.verdict), pf.n_points);
                any_data = 1;
            }
            break;
        case OD_INPUT_NOTHING:
            evid(d, i, NULL, 0, "%s: no OOM report, memory log or GPU listing recognized", in->name);
            break;
        }
        /* a BFC log is a log (its OOM line) and a profile (its chunks and Stats) */
        if (in->kind == OD_INPUT_LOG && in->profile)
            evidence_from_profile(d, in, i);
    }
    return any_data;
}

/* No OOM and no leak: healthy when the data shows no OOM either; unknown when an allocator
 * counted OOMs or a JAX peak sat at its limit without a message. */
static void no_oom_verdict(od_diagnosis *d, const od_diag_input *ins, size_t n)
{
    /* No OOM and no leak: healthy when the data shows no OOM either. */
    int ooms = 0;
    for (size_t i = 0; i < n; i++) {
        if (ins[i].kind == OD_INPUT_LOG && ins[i].triage) {
            for (size_t k = 0; k < ins[i].triage->n_summaries; k++)
                ooms += ins[i].triage->summaries[k].ooms > 0;
            if (ins[i].triage->stats && (ins[i].triage->stats->have & OD_MS_OOMS))
                ooms += ins[i].triage->stats->ooms > 0;
        }
    }
    /* JAX counts no OOMs: a peak at its limit is what says the device was full. */
    size_t full = OD_NO_INPUT;
    jax_stats js;
    for (size_t i = 0; i < n && full == OD_NO_INPUT; i++)
        if (input_jax_stats(&ins[i], &js) && jax_stats_full(&js))
            full = i;
    d->verdict = ooms || full != OD_NO_INPUT ? OD_VERDICT_UNKNOWN : OD_VERDICT_HEALTHY;
    if (ooms)
        evid(d, OD_NO_INPUT, NULL, ooms, "the allocator counted OOMs, but no OOM message was given");
    if (full != OD_NO_INPUT) {
        char a[32], b[32];
        evid(d, full, "peak_bytes_in_use", (double)js.peak,
             "%s: the peak, %s, was %.1f %% of the %s limit: the device was full, and no OOM message was given",
             ins[full].name, iec(js.peak, a, sizeof a), 100.0 * (double)js.peak / (double)js.limit,
             iec(js.limit, b, sizeof b));
    }
}

od_status od_diagnose(const od_diag_input *ins, size_t n, od_diagnosis **out, od_error *err)
{
    return od_diagnose_with(ins, n, NULL, out, err);
}

od_status od_diagnose_with(const od_diag_input *ins, size_t n, const od_diag_options *opts, od_diagnosis **out,
                           od_error *err)
{
    *out = NULL;
    od_diagnosis *d = calloc(1, sizeof *d);
    if (!d)
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    d->evidence = calloc(MAX_EVIDENCE, sizeof *d->evidence);
    d->do_now = calloc(MAX_REMEDIES, sizeof *d->do_now);
    d->long_term = calloc(MAX_REMEDIES, sizeof *d->long_term);
    d->summaries = calloc(n + 1, sizeof *d->summaries);
    d->summary_input = calloc(n + 1, sizeof *d->summary_input);
    if (!d->evidence || !d->do_now || !d->long_term || !d->summaries || !d->summary_input) {
        od_diagnosis_free(d);
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    }
    d->verdict = OD_VERDICT_UNKNOWN;
    d->decided_by = OD_NO_INPUT;
    for (size_t i = 0; i < n; i++) {
        if (ins[i].kind == OD_INPUT_SNAPSHOT && ins[i].snapshot) {
            od_status rc = analyze_snapshot(d, ins, n, i, opts, err);
            if (rc != OD_OK) {
                od_diagnosis_free(d);
                return rc;
            }
        }
    }
    int decided = decide_verdict(d, ins, n);
    rank_snapshots(d);
    int any_data = evidence_of_inputs(d, ins, n, opts);
    complete_from_profiles(d, ins, n);
    const od_estimate *expected = NULL;
    size_t expected_from = OD_NO_INPUT;
    od_estimate *mine = malloc(sizeof *mine);
    od_status pst = mine ? plan_to_compare(d, ins, n, opts, mine, &expected, &expected_from, err)
                         : od_fail(err, OD_ERR_NOMEM, "out of memory");
    if (pst != OD_OK) {
        free(mine);
        od_diagnosis_free(d);
        return pst;
    }
    expected_vs_actual(d, ins, expected, expected_from);
    free(mine);
    compare_snapshots(d, ins);
    if (!decided && any_data)
        no_oom_verdict(d, ins, n);
    find_device(d, ins, n, opts);
    prescribe(d, ins, n, opts);
    *out = d;
    return OD_OK;
}

void od_diagnosis_free(od_diagnosis *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->n_snapshots; i++) {
        od_iterations_free(d->snapshots[i].iterations);
        od_categories_free(d->snapshots[i].categories);
        free(d->snapshots[i].life_categories);
    }
    free(d->snapshots);
    for (size_t i = 0; i < d->n_summaries; i++)
        od_summary_free(d->summaries[i]);
    free(d->summaries);
    free(d->summary_input);
    free(d->evidence);
    free(d->do_now);
    free(d->long_term);
    free(d);
}

const od_summary *od_diagnosis_summary(const od_diagnosis *d, size_t input)
{
    for (size_t i = 0; d && i < d->n_summaries; i++)
        if (d->summary_input[i] == input)
            return d->summaries[i];
    return NULL;
}

const od_snapshot_findings *od_diagnosis_findings(const od_diagnosis *d, size_t input, int64_t device)
{
    for (size_t i = 0; d && i < d->n_snapshots; i++)
        if (d->snapshots[i].input == input && d->snapshots[i].device == device)
            return &d->snapshots[i];
    return NULL;
}
