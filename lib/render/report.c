/* report.c - the HTML report: page skeleton, CSS, and one SVG plot per section. */
#include "render/report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/categorize.h"
#include "analyze/snapdiff.h"
#include "analyze/summary.h"
#include "analyze/timeline.h"
#include "base/mem.h"
#include "base/units.h"
#include "model/pools.h"
#include "model/replay.h"
#include "base/textsafe.h"
#include "render/axis.h"
#include "render/doctor_doc.h"
#include "render/profilesvg.h"

/* Plot geometry, in SVG user units (the SVG scales to the page width). */
#define W 960.0
#define ML 76.0   /* left margin: y labels */
#define MR 16.0
#define MT 26.0
#define MB 40.0   /* bottom margin: x labels and axis title */

typedef struct {
    FILE *f;
    const od_report_input *in;
    size_t points, top;
    unsigned figure;         /* running id for SVG element ids */
    int scripted;            /* some plot carries data for the page's script */
} ctx;

/* ---------- text helpers ---------- */

/* s as the page may carry it: valid UTF-8 kept, each byte that is not replaced by U+FFFD
 * (base/textsafe.h); strings of a snapshot's frames are untrusted bytes. *own receives
 * what the caller frees (NULL when s was already valid). */
static const char *valid_utf8(const char *s, char **own)
{
    *own = NULL;
    size_t len = s ? strlen(s) : 0;
    if (!s || od_utf8_valid(s, len))
        return s;
    size_t n = od_utf8_sanitize(s, len, NULL, 0);
    if (!(*own = malloc(n + 1)))
        return "";
    od_utf8_sanitize(s, len, *own, n + 1);
    return *own;
}

static void esc(FILE *f, const char *s)
{
    char *own;
    for (s = valid_utf8(s, &own); s && *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default:
            /* Control characters have no business in a page; show them as '?'. */
            fputc((unsigned char)*s < 0x20 && *s != '\n' && *s != '\t' ? '?' : *s, f);
        }
    }
    free(own);
}

/* Each use gets its own buffer (a compound literal lives until the end of the block), so
 * several may appear in one printf. */
#define IEC(v) od_format_iec((v), (char[32]){0}, 32)
#define TICK(v) od_tick_label((v), (char[32]){0}, 32)

/* ---------- page ---------- */

/* The page's stylesheet and script are the files report.css, report_util.js and report.js
 * beside this one, turned into C strings at build time (tools/embed.sh, as jq embeds its
 * builtins): OD_REPORT_CSS, OD_REPORT_JS (report_util.js, then report.js). */
#include "render/report_assets.h"

/* ---------- SVG frame ---------- */

static void svg_open(ctx *c, double h, const char *id, const char *label)
{
    fprintf(c->f, "<svg id=\"%s\" viewBox=\"0 0 %.0f %.0f\" role=\"img\" aria-label=\"", id, W, h);
    esc(c->f, label);
    fprintf(c->f, "\">\n<title>");
    esc(c->f, label);
    fprintf(c->f, "</title>\n");
}

/* Horizontal gridlines and byte labels for [0, ymax] over the plot area. */
static void y_axis(ctx *c, double top, double h, uint64_t ymax, uint64_t step, const char *title)
{

    for (uint64_t v = 0; v <= ymax; v += step) {
        double y = top + h - (double)v / (double)ymax * h;
        fprintf(c->f, "<line class=\"grid\" x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\"/>", ML, y, W - MR, y);
        fprintf(c->f, "<text class=\"axis\" x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\" dominant-baseline=\"middle\">%s</text>\n",
                ML - 6, y, TICK(v));
        if (v > ymax - step)
            break;
    }
    if (title) {
        fprintf(c->f, "<text class=\"axis\" x=\"12\" y=\"%.1f\" transform=\"rotate(-90 12 %.1f)\" text-anchor=\"middle\">",
                top + h / 2, top + h / 2);
        esc(c->f, title);
        fprintf(c->f, "</text>\n");
    }
}

/* Vertical gridlines and labels for x in [x0, x1] (any unit) scaled by `scale` for the
 * label, with `unit` appended. */
static void x_axis(ctx *c, double top, double h, double x0, double x1, double scale, const char *unit,
                   const char *title, int integer)
{
    double span = x1 - x0, step = od_nice_step(span * scale, 8) / scale;
    if (integer && step < 1)
        step = 1;
    double first = ceil(x0 / step) * step;
    for (double v = first; v <= x1 + step * 1e-9; v += step) {
        double x = ML + (span > 0 ? (v - x0) / span : 0) * (W - ML - MR);
        fprintf(c->f, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.1f\"/>", x, top, x, top + h);
        fprintf(c->f, "<text class=\"axis\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g%s</text>\n", x,
                top + h + 16, round(v * scale * 1e6) / 1e6, unit);
    }
    if (title) {
        fprintf(c->f, "<text class=\"axis\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", ML + (W - ML - MR) / 2,
                top + h + 34);
        esc(c->f, title);
        fprintf(c->f, "</text>\n");
    }
}

/* ---------- timeline ---------- */

static int cmp_u64(const void *pa, const void *pb)
{
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    return a < b ? -1 : a > b;
}

typedef struct {
    uint64_t t0, t1, ymax;
    double top, h;
} frame;

static double fx(const frame *fr, uint64_t t)
{
    double span = (double)(fr->t1 - fr->t0);
    double r = span > 0 ? (double)(t - fr->t0) / span : 0;
    return ML + r * (W - ML - MR);
}

static double fy(const frame *fr, uint64_t v)
{
    return fr->top + fr->h - (double)v / (double)fr->ymax * fr->h;
}

/* The allocator replay of the trace under the snapshot's settings (and --capacity as the
 * cap): shown only when the model ends in the snapshot's own final state, since only then
 * are its block-size figures (memory_allocated(), max_memory_allocated()) trustworthy. */
typedef struct {
    int ran, agrees;
    od_replay_result r;
} replay_view;

static void run_replay(ctx *c, const od_snapshot *s, const od_device_summary *d, replay_view *v)
{
    od_replay_opts o;
    memset(&o, 0, sizeof o);
    memset(v, 0, sizeof *v);
    od_replay_config_from_snapshot(s, &o.cfg);
    o.cfg.allowed_bytes = c->in->capacity_bytes;
    o.device = d->device;
    if (od_replay_snapshot(s, &o, &v->r, NULL) != OD_OK)
        return;
    if (!c->in->capacity_bytes && d->n_ooms && d->trace && d->trace->blocks_from_replay) {
        /* A run that died of OOM under a cap replays under the most it reserved (as the
         * trace model found it reproduces the run). */
        o.cfg.allowed_bytes = d->trace->max_reserved_bytes;
        if (od_replay_snapshot(s, &o, &v->r, NULL) != OD_OK)
            return;
    }
    v->ran = 1;
    v->agrees = v->r.snapshot_allocated_bytes == v->r.stats.allocated_bytes &&
                v->r.snapshot_reserved_bytes == v->r.stats.reserved_bytes;
}


/* ---------- the timeline's data, for the page's script ---------- */

/* Lifetimes embedded for hovering: every one up to this many, else those live at the
 * peak and then the largest, so the 1 M-entry fixture's page stays a few MiB. */
#define EMBED_LIVES 30000
/* Points embedded for zooming: the plot's own, or up to this many for long traces (the
 * script downsamples them per pixel at each zoom level). */
#define FINE_POINTS 20000

/* A JSON string that is also safe inside <script>: <, > and & as \u escapes. */
static void jstr(FILE *f, const char *s)
{
    char *own;
    fputc('"', f);
    for (s = valid_utf8(s, &own); s && *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20 || ch == '<' || ch == '>' || ch == '&')
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
    free(own);
}

/* ,"key":[...] of n values; delta: each as its difference from the one before (the first
 * from base). */
static void jarr_u64(FILE *f, const char *key, const uint64_t *v, size_t n, int delta, uint64_t base)
{
    uint64_t prev = base;
    fprintf(f, ",\"%s\":[", key);
    for (size_t i = 0; i < n; i++) {
        uint64_t x = v[i];
        fprintf(f, "%s%llu", i ? "," : "", (unsigned long long)(delta ? x - prev : x));
        prev = x;
    }
    fputc(']', f);
}

typedef struct {
    const od_trace *t;
    const uint8_t *at_peak;
} pick_ctx;

static pick_ctx pick; /* qsort has no context argument; the report is written on one thread */

/* Live at the peak first, then larger blocks first, then trace order. */
static int cmp_pick(const void *pa, const void *pb)
{
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    if (pick.at_peak[a] != pick.at_peak[b])
        return pick.at_peak[a] ? -1 : 1;
    uint64_t x = pick.t->lives[a].block_bytes, y = pick.t->lives[b].block_bytes;
    if (x != y)
        return x > y ? -1 : 1;
    return a < b ? -1 : a > b;
}

/* Keep in sel[0..k) the k lifetimes that come first by cmp_pick, of sel[0..n) (in any
 * order): a bounded max-heap of the k best so far, so n lifetimes cost n log k, not the
 * sort of all n. cmp_pick is a total order, so the set is the full sort's. Returns k. */
static size_t pick_best(uint32_t *sel, size_t n, size_t k)
{
    /* heap property: no child comes after its parent by cmp_pick (the worst kept at 0) */
#define WORSE(i, j) (cmp_pick(&sel[i], &sel[j]) > 0)
    for (size_t i = 0; i < n; i++) {
        size_t at;
        if (i < k) {
            at = i;
            sel[at] = sel[i];
            while (at > 0 && WORSE(at, (at - 1) / 2)) { /* sift up */
                uint32_t tmp = sel[at];
                sel[at] = sel[(at - 1) / 2];
                sel[(at - 1) / 2] = tmp;
                at = (at - 1) / 2;
            }
            continue;
        }
        if (cmp_pick(&sel[i], &sel[0]) >= 0)
            continue; /* no better than the worst kept */
        sel[0] = sel[i];
        for (at = 0;;) { /* sift down */
            size_t l = 2 * at + 1, r = l + 1, w = at;
            if (l < k && WORSE(l, w))
                w = l;
            if (r < k && WORSE(r, w))
                w = r;
            if (w == at)
                break;
            uint32_t tmp = sel[at];
            sel[at] = sel[w];
            sel[w] = tmp;
            at = w;
        }
    }
#undef WORSE
    return k;
}

/* Trace order: those live before the trace first. */
static uint64_t life_order(const od_lifetime *l)
{
    return l->alloc_index == OD_TRACE_BEFORE ? 0 : (uint64_t)l->alloc_index + 1;
}

static int cmp_order(const void *pa, const void *pb)
{
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    uint64_t x = life_order(&pick.t->lives[a]), y = life_order(&pick.t->lives[b]);
    if (x != y)
        return x < y ? -1 : 1;
    return a < b ? -1 : a > b;
}

/* The timeline data's frames ("fr": file:line:function texts) and stacks ("st": frame
 * indices into fr, innermost first), only those the embedded lifetimes use. */
static void write_frames_and_stacks(FILE *f, const od_snapshot *s, const uint32_t *frames, size_t n_frames,
                                    const uint32_t *stacks, size_t n_stacks, const uint32_t *frame_map)
{
    fprintf(f, "],\n\"fr\":[");
    for (size_t i = 0; i < n_frames; i++) {
        const od_frame *fm = &s->frames[frames[i]];
        char text[1024];
        snprintf(text, sizeof text, "%s:%lld:%s", fm->filename ? fm->filename : "??", (long long)fm->line,
                 fm->name ? fm->name : "??");
        fprintf(f, "%s", i ? "," : "");
        jstr(f, text);
    }
    fprintf(f, "],\n\"st\":[");
    for (size_t i = 0; i < n_stacks; i++) {
        uint32_t nfr = 0;
        const uint32_t *fi = od_snapshot_stack(s, stacks[i], &nfr);
        fprintf(f, "%s[", i ? "," : "");
        for (uint32_t k = 0, w = 0; k < nfr; k++)
            if (fi[k] < s->n_frames)
                fprintf(f, "%s%u", w++ ? "," : "", frame_map[fi[k]]);
        fputc(']', f);
    }
}

/* The timeline data's lifetimes sel[0..n_sel) in trace order: start deltas ("as"),
 * durations ("ad", -1 never freed), block and requested bytes ("ab", "ar"), stack ("ak"),
 * category ("ac"), alloc entries ("ai") and those live at the peak ("ap"). */
static void write_lifetimes(FILE *f, const od_trace *tr, const frame *fr, const uint32_t *sel, size_t n_sel,
                            const uint32_t *stack_map, const uint8_t *cats, const uint8_t *at_peak)
{
    const od_snapshot *s = tr->snap;
    /* lifetimes, in trace order */
    uint64_t prev = fr->t0;
    fprintf(f, "],\n\"as\":[");
    for (size_t i = 0; i < n_sel; i++) {
        const od_lifetime *l = &tr->lives[sel[i]];
        uint64_t a = l->alloc_index == OD_TRACE_BEFORE ? fr->t0 : od_trace_at(tr->entries, l->alloc_index).time_us;
        if (a < prev) /* traces are time-ordered; a clock step back is drawn at the same time */
            a = prev;
        fprintf(f, "%s%llu", i ? "," : "", (unsigned long long)(a - prev));
        prev = a;
    }
    fprintf(f, "],\n\"ad\":[");
    for (size_t i = 0; i < n_sel; i++) {
        const od_lifetime *l = &tr->lives[sel[i]];
        uint64_t a = l->alloc_index == OD_TRACE_BEFORE ? fr->t0 : od_trace_at(tr->entries, l->alloc_index).time_us;
        if (l->free_index == OD_TRACE_NEVER || l->free_index >= tr->n_entries) {
            fprintf(f, "%s-1", i ? "," : "");
        } else {
            uint64_t z = od_trace_at(tr->entries, l->free_index).time_us;
            fprintf(f, "%s%llu", i ? "," : "", (unsigned long long)(z > a ? z - a : 0));
        }
    }
    fprintf(f, "],\n\"ab\":[");
    for (size_t i = 0; i < n_sel; i++)
        fprintf(f, "%s%llu", i ? "," : "", (unsigned long long)tr->lives[sel[i]].block_bytes);
    fprintf(f, "],\n\"ar\":[");
    for (size_t i = 0; i < n_sel; i++) {
        const od_lifetime *l = &tr->lives[sel[i]];
        /* requested bytes only where they differ from the block's: 0 means "the same" */
        uint64_t req = od_life_of(tr, l).requested_bytes;
        fprintf(f, "%s%llu", i ? "," : "", (unsigned long long)(req == l->block_bytes ? 0 : req));
    }
    fprintf(f, "],\n\"ak\":[");
    for (size_t i = 0; i < n_sel; i++) {
        uint32_t sk = od_life_of(tr, &tr->lives[sel[i]]).stack;
        fprintf(f, "%s%lld", i ? "," : "", sk < s->n_stacks ? (long long)stack_map[sk] : -1LL);
    }
    /* each allocation's category: categorize's, the one the diagnosis counts at the peak */
    fprintf(f, "],\"ac\":[");
    for (size_t i = 0; i < n_sel; i++)
        fprintf(f, "%s%d", i ? "," : "", cats ? (int)cats[sel[i]] : (int)OD_CAT_UNKNOWN);
    fprintf(f, "],\"ai\":[");
    long long prev_entry = -1; /* alloc entries as deltas from -1 (live before the trace: -1) */
    for (size_t i = 0; i < n_sel; i++) {
        const od_lifetime *l = &tr->lives[sel[i]];
        long long e = l->alloc_index == OD_TRACE_BEFORE ? -1LL : (long long)l->alloc_index;
        fprintf(f, "%s%lld", i ? "," : "", e - prev_entry);
        prev_entry = e;
    }
    fprintf(f, "],\n\"ap\":[");
    size_t w = 0; /* the lifetimes live at the peak (for the icicle), as positions in the above */
    for (size_t i = 0; i < n_sel; i++)
        if (at_peak[sel[i]])
            fprintf(f, "%s%zu", w++ ? "," : "", i);
}

/* The peak and the OOM events of a timeline: marks the script moves with the zoom (data-t:
 * their time from the plot's start). */
static void timeline_marks(ctx *c, const od_device_summary *d, const od_timeline *t, const frame *frp)
{
    const frame fr = *frp;
    /* The peak and the OOM events: marks the script moves with the zoom (data-t: their time). */
    fprintf(c->f, "</g>\n<g class=\"marks\">\n<g data-t=\"%llu\">", (unsigned long long)(t->peak_time_us - fr.t0));
    double px = fx(frp, t->peak_time_us), py = fy(frp, t->peak_live_bytes);
    fprintf(c->f, "<line class=\"peak\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", px, fr.top, px, fr.top + fr.h);
    fprintf(c->f, "<circle class=\"peakdot\" cx=\"%.1f\" cy=\"%.1f\" r=\"4\"><title>peak: %s live at %.3f s</title></circle>",
            px, py, IEC(t->peak_live_bytes), (double)(t->peak_time_us - fr.t0) / 1e6);
    int right = px > ML + (W - ML - MR) * 0.7;
    double ly = py - 8 < fr.top + 12 ? fr.top + 12 : py - 8;
    fprintf(c->f, "<text class=\"peak\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\">peak %s</text></g>\n",
            right ? px - 8 : px + 8, ly, right ? "end" : "start", IEC(t->peak_live_bytes));
    for (size_t i = 0; i < d->n_ooms; i++) {
        const od_oom_event *o = &d->ooms[i];
        double ox = fx(frp, o->time_us);
        int r2 = ox > ML + (W - ML - MR) * 0.6;
        fprintf(c->f, "<g data-t=\"%llu\">", (unsigned long long)(o->time_us > fr.t0 ? o->time_us - fr.t0 : 0));
        fprintf(c->f, "<line class=\"oom\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"><title>OOM: tried to allocate %s with %s free on the device, at ",
                ox, fr.top - 10, ox, fr.top + fr.h, IEC(o->size_bytes), IEC(o->device_free_bytes));
        esc(c->f, o->site);
        fprintf(c->f, "</title></line>");
        if (i < 3)
            fprintf(c->f, "<text class=\"oom\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\">OOM: tried to allocate %s</text>\n",
                    r2 ? ox - 6 : ox + 6, fr.top - 12 + 14.0 * (double)i + (i ? 14 : 0), r2 ? "end" : "start",
                    IEC(o->size_bytes));
        fprintf(c->f, "</g>\n");
    }
}

/* The legend under a timeline: the stacked sites (top of the stack first, as drawn) with
 * their bytes at the peak, the lines and the marks. */
static void timeline_legend(ctx *c, const od_device_summary *d, const od_timeline *t, const od_report_item *it,
                            const size_t *order, int other, uint64_t t0)
{
    size_t ng = t->n_groups;
    fprintf(c->f, "</g>\n</svg>\n<ul class=\"legend\">\n");
    for (size_t o = ng; o-- > 0;) { /* top of the stack first, as drawn */
        size_t g = order[o];
        uint64_t at_peak = 0;
        if (g + 1 == ng && !other)
            continue;
        if (g + 1 < ng) {
            at_peak = d->peak_sites.items[g].bytes;
        } else {
            for (size_t k = ng - 1; k < d->peak_sites.n; k++)
                at_peak += d->peak_sites.items[k].bytes;
        }
        fprintf(c->f, "<li><span class=\"sw %s%c\"></span><code>", g + 1 == ng ? "so" : "s",
                g + 1 == ng ? ' ' : (char)('0' + g % 8));
        esc(c->f, t->group_site[g]);
        if (g + 1 == ng && d->peak_sites.n > ng - 1)
            fprintf(c->f, "</code> (%zu sites)", d->peak_sites.n - (ng - 1));
        else
            fprintf(c->f, "</code>");
        fprintf(c->f, " &mdash; %s at the peak</li>\n", IEC(at_peak));
    }
    fprintf(c->f, "<li><span class=\"sw ln\"></span>live bytes (total, in blocks)</li>\n");
    if (t->has_reserved)
        fprintf(c->f, "<li><span class=\"sw rs\"></span>reserved by the caching allocator (from the trace's segment events)"
                      " &mdash; highest %s</li>\n", IEC(t->peak_reserved_bytes));
    if (it->n_replay_reserved)
        fprintf(c->f, "<li><span class=\"sw rs\"></span>reserved (allocator replay)</li>\n");
    fprintf(c->f, "<li><span class=\"sw pk\"></span>peak: %s live %s %.3f s</li>\n", IEC(t->peak_live_bytes),
            t->has_peak ? "at" : "from the start,", (double)(t->peak_time_us - t0) / 1e6);
    if (d->n_ooms)
        fprintf(c->f, "<li><span class=\"sw om\"></span>OOM event%s</li>\n", d->n_ooms > 1 ? "s" : "");
}

/* The data the page's script needs to redraw the timeline at any zoom and say what lies
 * under the pointer, as one JSON object in a <script type="application/json">:
 *   p, l, r, g   point times (deltas from t0), live, reserved, and per stacked group
 *                (in drawing order) the bytes at each point
 *   fr, st       frame texts "file:line:function" and stacks as frame indices
 *                (innermost first), both deduplicated: only those the lifetimes use
 *   a            lifetimes in trace order: start deltas, durations (-1: never freed),
 *                block and requested bytes, stack, category (cats)
 *   ap           which of them are live at the peak */
static od_status timeline_data(ctx *c, size_t item, const od_device_summary *d, const od_timeline *t,
                               const frame *fr, const size_t *order, int other, const char *id, od_error *err)
{
    const od_trace *tr = d->trace;
    const od_snapshot *s = tr->snap;
    FILE *f = c->f;
    od_timeline *fine = NULL;
    const od_timeline *pt = t;
    uint32_t *sel = NULL, *stack_map = NULL, *frame_map = NULL, *stacks = NULL, *frames = NULL;
    uint8_t *at_peak = NULL;
    od_status st = OD_OK;
    if (d->entries > t->n_points && t->n_points < FINE_POINTS) {
        size_t n = d->entries < FINE_POINTS ? d->entries : FINE_POINTS;
        st = od_timeline_build(s, d, n, t->n_groups - 1, &fine, err);
        if (st != OD_OK)
            return st;
        pt = fine;
    }
    /* The allocations' categories: the diagnosis's (categorize.h's per-lifetime answer),
     * else categorized here by the same function. */
    const od_report_item *itm = &c->in->items[item];
    const od_snapshot_findings *df = c->in->diagnosed ? od_diagnosis_findings(c->in->diagnosed, itm->input, d->device)
                                                      : NULL;
    const uint8_t *cats = df && df->figures->trace == tr ? df->life_categories : NULL;
    uint8_t *own_cats = NULL;
    if (!cats) {
        od_categories *cc = NULL;
        st = od_categorize_with(tr, SIZE_MAX, NULL, &cc, &own_cats, err);
        od_categories_free(cc);
        if (st != OD_OK)
            return st;
        cats = own_cats;
    }
    size_t nl = tr->n_lives, ns = s->n_stacks ? s->n_stacks : 1, nf = s->n_frames ? s->n_frames : 1;
    sel = malloc((nl ? nl : 1) * sizeof *sel);
    at_peak = calloc(nl ? nl : 1, 1);
    stack_map = malloc(ns * sizeof *stack_map);
    frame_map = malloc(nf * sizeof *frame_map);
    stacks = malloc(ns * sizeof *stacks);
    frames = malloc(nf * sizeof *frames);
    if (!sel || !at_peak || !stack_map || !frame_map || !stacks || !frames) {
        st = od_fail(err, OD_ERR_NOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < nl; i++) {
        sel[i] = (uint32_t)i;
        at_peak[i] = (uint8_t)(tr->has_peak && od_trace_live_after(&tr->lives[i], tr->peak_index));
    }
    pick.t = tr;
    pick.at_peak = at_peak;
    size_t n_sel = nl > EMBED_LIVES ? pick_best(sel, nl, EMBED_LIVES) : nl;
    od_sort(sel, n_sel, sizeof *sel, cmp_order);
    memset(stack_map, 0xff, ns * sizeof *stack_map);
    memset(frame_map, 0xff, nf * sizeof *frame_map);
    size_t n_stacks = 0, n_frames = 0;
    for (size_t i = 0; i < n_sel; i++) {
        uint32_t sk = od_life_of(tr, &tr->lives[sel[i]]).stack;
        if (sk >= s->n_stacks || stack_map[sk] != UINT32_MAX)
            continue;
        stack_map[sk] = (uint32_t)n_stacks;
        stacks[n_stacks++] = sk;
        uint32_t nfr = 0;
        const uint32_t *fi = od_snapshot_stack(s, sk, &nfr);
        for (uint32_t k = 0; k < nfr; k++)
            if (fi[k] < s->n_frames && frame_map[fi[k]] == UINT32_MAX) {
                frame_map[fi[k]] = (uint32_t)n_frames;
                frames[n_frames++] = fi[k];
            }
    }

    fprintf(f, "<script type=\"application/json\" class=\"od-timeline\" data-for=\"%s\">\n{\"t0\":%llu,\"t1\":%llu,"
               "\"ymax\":%llu,\"w\":%.0f,\"ml\":%.0f,\"mr\":%.0f,\"top\":%.0f,\"h\":%.0f,\"peak\":%llu,\"peakb\":%llu,"
               "\"entries\":%llu,\"lives\":%zu,\"all\":%d,\"item\":%zu,\"device\":%lld",
            id, (unsigned long long)fr->t0, (unsigned long long)fr->t1, (unsigned long long)fr->ymax, W, ML, MR, fr->top,
            fr->h, (unsigned long long)t->peak_time_us, (unsigned long long)t->peak_live_bytes,
            (unsigned long long)d->entries, nl, n_sel == nl, item, (long long)d->device);
    /* points */
    jarr_u64(f, "p", pt->time_us, pt->n_points, 1, fr->t0);
    jarr_u64(f, "l", pt->live_bytes, pt->n_points, 0, 0);
    if (pt->has_reserved)
        jarr_u64(f, "r", pt->reserved_bytes, pt->n_points, 0, 0);
    fprintf(f, ",\"g\":[");
    size_t ng = pt->n_groups;
    for (size_t o = 0; o < ng; o++) {
        size_t g = order[o];
        if (g + 1 == ng && !other)
            break;
        fprintf(f, "%s[", o ? "," : "");
        for (size_t i = 0; i < pt->n_points; i++)
            fprintf(f, "%s%llu", i ? "," : "", (unsigned long long)pt->group_bytes[i * ng + g]);
        fputc(']', f);
    }
    fprintf(f, "],\"gn\":[");
    for (size_t o = 0; o < ng; o++) {
        if (order[o] + 1 == ng && !other)
            break;
        fprintf(f, "%s", o ? "," : "");
        jstr(f, t->group_site[order[o]]);
    }
    write_frames_and_stacks(f, s, frames, n_frames, stacks, n_stacks, frame_map);
    fprintf(f, "],\"cats\":[");
    for (int k = 0; k < OD_CAT_COUNT; k++) {
        fprintf(f, "%s", k ? "," : "");
        jstr(f, od_category_name((od_category)k));
    }
    write_lifetimes(f, tr, fr, sel, n_sel, stack_map, cats, at_peak);
    fprintf(f, "]}\n</script>\n");
    c->scripted = 1;
out:
    free(own_cats);
    free(sel);
    free(at_peak);
    free(stack_map);
    free(frame_map);
    free(stacks);
    free(frames);
    od_timeline_free(fine);
    return st;
}

static od_status timeline_plot(ctx *c, const od_device_summary *d, const od_timeline *t, const od_report_item *it,
                               const replay_view *rv, od_error *err)
{
    char id[48];
    frame fr = {t->first_time_us, t->last_time_us, 0, MT, 300};
    if (fr.t1 == fr.t0)
        fr.t1 = fr.t0 + 1;
    uint64_t top = t->peak_live_bytes;
    if (t->has_reserved && t->peak_reserved_bytes > top)
        top = t->peak_reserved_bytes;
    for (size_t i = 0; i < it->n_replay_reserved; i++)
        if (it->replay_reserved[i].bytes > top)
            top = it->replay_reserved[i].bytes;
    uint64_t step = od_byte_step(top ? top : 1, 6);
    fr.ymax = od_round_up(top, step);
    double span_s = (double)(fr.t1 - fr.t0) / 1e6;
    int ms = span_s < 2;

    snprintf(id, sizeof id, "timeline-%u", c->figure++);
    fprintf(c->f, "<figure>\n");
    svg_open(c, fr.top + fr.h + MB, id, "memory timeline: live bytes by site, reserved bytes, peak and OOM events");
    y_axis(c, fr.top, fr.h, fr.ymax, step, NULL);
    fprintf(c->f, "<g class=\"xax\">\n");
    x_axis(c, fr.top, fr.h, 0, (double)(fr.t1 - fr.t0), ms ? 1e-3 : 1e-6, ms ? " ms" : " s",
           "time since the trace's first entry", 0);
    fprintf(c->f, "</g>\n<g class=\"plot\">\n");

    /* Stacked areas; "other sites" only when it ever holds memory. Persistent groups go
     * at the bottom (highest median over the points first) so the spikes of short-lived
     * ones ride on top of a steady base instead of lifting it. Colours follow the peak
     * ranking. */
    size_t ng = t->n_groups;
    int other = 0;
    for (size_t i = 0; i < t->n_points && !other; i++)
        other = t->group_bytes[i * ng + ng - 1] != 0;
    size_t order[9];
    uint64_t lows[9];
    uint64_t *col = malloc(t->n_points * sizeof *col);
    for (size_t g = 0; g < ng && g < 9; g++) {
        order[g] = g;
        lows[g] = 0;
        if (!col)
            continue; /* out of memory: keep the peak ranking */
        for (size_t i = 0; i < t->n_points; i++)
            col[i] = t->group_bytes[i * ng + g];
        od_sort(col, t->n_points, sizeof *col, cmp_u64);
        lows[g] = col[t->n_points / 2];
    }
    free(col);
    for (size_t a = 1; a + 1 < ng; a++) /* insertion sort, "other" stays last */
        for (size_t b = a; b > 0 && lows[order[b]] > lows[order[b - 1]]; b--) {
            size_t x = order[b];
            order[b] = order[b - 1];
            order[b - 1] = x;
        }
    for (size_t o = 0; o < ng; o++) {
        size_t g = order[o];
        if (g + 1 == ng && !other)
            break;
        fprintf(c->f, "<path data-k=\"%zu\" class=\"%s%c\" d=\"", o, g + 1 == ng ? "so" : "s",
                g + 1 == ng ? ' ' : (char)('0' + g % 8));
        for (size_t i = 0; i < t->n_points; i++) {
            uint64_t below = 0;
            for (size_t h = 0; h <= o; h++)
                below += t->group_bytes[i * ng + order[h]];
            fprintf(c->f, "%c%.1f %.1f", i ? 'L' : 'M', fx(&fr, t->time_us[i]), fy(&fr, below));
        }
        for (size_t i = t->n_points; i-- > 0;) {
            uint64_t below = 0;
            for (size_t h = 0; h < o; h++)
                below += t->group_bytes[i * ng + order[h]];
            fprintf(c->f, "L%.1f %.1f", fx(&fr, t->time_us[i]), fy(&fr, below));
        }
        fprintf(c->f, "Z\"><title>");
        esc(c->f, t->group_site[g]);
        fprintf(c->f, "</title></path>\n");
    }
    /* Total live and reserved lines. */
    fprintf(c->f, "<path class=\"live\" d=\"");
    for (size_t i = 0; i < t->n_points; i++)
        fprintf(c->f, "%c%.1f %.1f", i ? 'L' : 'M', fx(&fr, t->time_us[i]), fy(&fr, t->live_bytes[i]));
    fprintf(c->f, "\"><title>live bytes (blocks)</title></path>\n");
    if (t->has_reserved) {
        fprintf(c->f, "<path class=\"res\" d=\"");
        for (size_t i = 0; i < t->n_points; i++)
            fprintf(c->f, "%c%.1f %.1f", i ? 'L' : 'M', fx(&fr, t->time_us[i]), fy(&fr, t->reserved_bytes[i]));
        fprintf(c->f, "\"><title>reserved bytes (from the trace's segment events)</title></path>\n");
    }
    if (it->n_replay_reserved) {
        fprintf(c->f, "<path class=\"res replay\" style=\"stroke-dasharray:2 2\" d=\"");
        for (size_t i = 0; i < it->n_replay_reserved; i++) {
            uint64_t tt = it->replay_reserved[i].time_us;
            tt = tt < fr.t0 ? fr.t0 : tt > fr.t1 ? fr.t1 : tt;
            fprintf(c->f, "%c%.1f %.1f", i ? 'L' : 'M', fx(&fr, tt), fy(&fr, it->replay_reserved[i].bytes));
        }
        fprintf(c->f, "\"><title>reserved bytes (allocator replay)</title></path>\n");
    }
    timeline_marks(c, d, t, &fr);
    timeline_legend(c, d, t, it, order, other, fr.t0);
    fprintf(c->f, "</ul>\n<figcaption>Memory over %.3f s of trace (%llu entries%s). Live bytes are the block sizes of "
                  "live allocations (what memory_allocated() counts), stacked by the source line that made them (the sites holding the most at the peak; the "
                  "most persistent at the bottom).",
            span_s, (unsigned long long)d->entries,
            t->n_points < d->entries ? "" : ", every entry drawn");
    if (t->n_points < d->entries)
        fprintf(c->f, " Drawn as %zu points: each is the highest moment of its interval, so no peak is lost.",
                t->n_points);
    if (!d->complete)
        fprintf(c->f, " The trace starts mid-run (ring buffer wrapped or recording started late): %s was already live, "
                      "shown as <code>&lt;before trace&gt;</code>.", IEC(d->trace->start_block_bytes));
    if (!t->has_reserved)
        fprintf(c->f, " Reserved bytes are not shown: the trace's segment events do not add up to the final segments.");
    if (rv->ran && rv->agrees) {
        fprintf(c->f, " Allocator replay (the snapshot's settings%s) ends in the snapshot's final state: peak allocated "
                      "%s in block sizes (<code>max_memory_allocated()</code>), peak reserved %s.",
                c->in->capacity_bytes ? ", the given capacity as the cap"
                : rv->r.oom.happened ? ", under a cap of the most the run reserved" : "",
                IEC(rv->r.stats.peak_allocated_bytes),
                IEC(rv->r.stats.peak_reserved_bytes));
        if (rv->r.oom.happened && rv->r.oom.recorded)
            fprintf(c->f, " At the OOM the model's pool held %s reserved, %s allocated, largest free block %s.",
                    IEC(rv->r.oom.reserved_bytes), IEC(rv->r.oom.allocated_bytes), IEC(rv->r.oom.largest_free_bytes));
    } else if (rv->ran) {
        fprintf(c->f, " Allocator replay does not end in this snapshot's final state%s, so its figures are not shown.",
                d->n_ooms && !c->in->capacity_bytes ? " (was the run capped? give the cap as the capacity)" : "");
    }
    fprintf(c->f, "</figcaption>\n");
    od_status st = timeline_data(c, (size_t)(it - c->in->items), d, t, &fr, order, other, id, err);
    fprintf(c->f, "</figure>\n");
    return st;
}

/* ---------- iterations ---------- */

/* The diagnosis document's entry for a snapshot input's device, or NULL. */
static const json_t *doc_snapshot(const ctx *c, const char *name, int64_t device)
{
    size_t i;
    const json_t *s;
    json_array_foreach(json_object_get(c->in->diagnosis, "snapshots"), i, s) {
        const char *f = json_string_value(json_object_get(s, "file"));
        if (f && strcmp(f, name) == 0 && json_integer_value(json_object_get(s, "device")) == device)
            return s;
    }
    return NULL;
}

static void iterations_plot(ctx *c, const od_timeline *t, const char *name, int64_t device)
{
    char id[48];
    size_t n = t->n_iterations;
    uint64_t top = 0;
    for (size_t i = 0; i < n; i++)
        if (t->iterations[i].peak_bytes > top)
            top = t->iterations[i].peak_bytes;
    uint64_t step = od_byte_step(top ? top : 1, 5);
    uint64_t ymax = od_round_up(top, step);
    double h = 220, pw = W - ML - MR, slot = pw / (double)n, bw = slot * 0.7;
    snprintf(id, sizeof id, "iterations-%u", c->figure++);
    fprintf(c->f, "<figure>\n");
    svg_open(c, MT + h + MB, id, "live memory per iteration");
    y_axis(c, MT, h, ymax, step, NULL);
    frame fr = {0, 1, ymax, MT, h};
    for (size_t i = 0; i < n; i++) {
        const od_timeline_iteration *x = &t->iterations[i];
        double x0 = ML + slot * (double)i + (slot - bw) / 2;
        fprintf(c->f, "<rect class=\"barpk\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"><title>iteration %zu: peak %s</title></rect>",
                x0, fy(&fr, x->peak_bytes), bw, fy(&fr, 0) - fy(&fr, x->peak_bytes), i + 1, IEC(x->peak_bytes));
        fprintf(c->f, "<rect class=\"bar\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"><title>iteration %zu: %s live after %s</title></rect>\n",
                x0 + bw * 0.2, fy(&fr, x->live_bytes), bw * 0.6, fy(&fr, 0) - fy(&fr, x->live_bytes), i + 1,
                IEC(x->live_bytes), t->boundary_name);
        if (n <= 16)
            fprintf(c->f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>", x0 + bw / 2,
                    fy(&fr, x->live_bytes) - 4, IEC(x->live_bytes));
        if (n <= 40 || i % (n / 20 + 1) == 0)
            fprintf(c->f, "<text class=\"axis\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%zu</text>\n", x0 + bw / 2,
                    MT + h + 16, i + 1);
    }
    fprintf(c->f, "<text class=\"axis\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">iteration (ends at %s)</text>\n",
            ML + pw / 2, MT + h + 34, t->boundary_name);
    fprintf(c->f, "</svg>\n<ul class=\"legend\"><li><span class=\"sw a\"></span>live when the iteration's %s ended</li>"
                  "<li><span class=\"sw a\" style=\"opacity:.35\"></span>highest live during the iteration</li></ul>\n",
            t->boundary_name);
    /* The trend of live memory at the boundaries, as trend judges step logs. */
    fprintf(c->f, "<figcaption>Live bytes at each of the %zu iteration boundaries found in the trace "
                  "(<code>%s</code>).", n, t->boundary_name);
    /* The trend is the diagnosis's (doctor's judgement, bounded accumulation included). */
    const json_t *ij = json_object_get(doc_snapshot(c, name, device), "iterations");
    const char *trend = json_string_value(json_object_get(ij, "trend"));
    if (trend) {
        double g = json_number_value(json_object_get(ij, "growth_bytes_per_iteration"));
        fprintf(c->f, " Trend: <strong>%s</strong>, %s%s per iteration (r&sup2; %.3f)%s.", trend, g < 0 ? "&minus;" : "+",
                IEC((uint64_t)fabs(g)), json_number_value(json_object_get(ij, "r2")),
                json_is_true(json_object_get(ij, "bounded")) ? "; what accumulated is released before the trace ends: "
                                                               "bounded, not a leak" : "");
    }
    fprintf(c->f, "</figcaption>\n</figure>\n");
}

/* ---------- segment map ---------- */

typedef enum { SP_ALLOC, SP_PEND, SP_STRAND, SP_FREE } span_kind;
static const char span_class[] = {'a', 'p', 'x', 'f'};

/* The final segments of a device as a layout (busy blocks only: the rest is free). */
static od_layout *final_layout(const od_snapshot *s, int64_t device)
{
    od_layout *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    size_t ns = 0, nb = 0;
    for (size_t i = 0; i < s->n_segments; i++)
        if (s->segments[i].device == device)
            ns++, nb += s->segments[i].n_blocks;
    l->segments = calloc(ns ? ns : 1, sizeof *l->segments);
    l->blocks = calloc(nb ? nb : 1, sizeof *l->blocks);
    if (!l->segments || !l->blocks) {
        od_layout_free(l);
        return NULL;
    }
    for (size_t i = 0; i < s->n_segments; i++) {
        const od_segment *seg = &s->segments[i];
        if (seg->device != device)
            continue;
        od_layout_segment *o = &l->segments[l->n_segments++];
        o->address = seg->address;
        o->size = seg->total_size;
        o->first_block = l->n_blocks;
        l->reserved_bytes += seg->total_size;
        for (size_t k = 0; k < seg->n_blocks; k++) {
            const od_block *bl = &s->blocks[seg->first_block + k];
            if (bl->state == OD_BLOCK_INACTIVE || !bl->size)
                continue;
            /* unknown states count as busy: they are not free */
            l->blocks[l->n_blocks++] = (od_layout_block){bl->address, bl->size,
                                                         bl->state == OD_BLOCK_ACTIVE_ALLOCATED
                                                             ? OD_BLOCK_ACTIVE_ALLOCATED
                                                             : OD_BLOCK_ACTIVE_PENDING_FREE};
            l->busy_bytes += bl->size;
        }
        o->n_blocks = l->n_blocks - o->first_block;
    }
    return l;
}

/* Draw bytes [a, z) of the row-wrapped strip in one class. */
static void strip(ctx *c, uint64_t a, uint64_t z, uint64_t row, double unit, double rh, double gap, span_kind kind)
{
    while (a < z) {
        uint64_t r = a / row, rend = (r + 1) * row;
        uint64_t e = z < rend ? z : rend;
        double x = ML + (double)(a - r * row) * unit, w = (double)(e - a) * unit;
        if (w >= 0.05)
            fprintf(c->f, "<rect class=\"%c\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.0f\"/>", span_class[kind], x,
                    6 + (double)r * (rh + gap), w, rh);
        a = e;
    }
}

/* The segment map: every segment laid out left to right in address order on rows of a
 * fixed byte width, busy blocks by state, free space stranded (in a segment that still
 * holds busy blocks) or releasable. Fills *largest_free with the largest free run. */
static void segment_map(ctx *c, const od_layout *l, const char *label, const char *fig_attrs, uint64_t *largest_free,
                        uint64_t *free_total)
{
    char id[48];
    uint64_t total = l->reserved_bytes;
    *largest_free = *free_total = 0;
    if (!total)
        return;
    uint64_t row = od_byte_step(total, 24);
    size_t rows = (size_t)((total + row - 1) / row);
    double rh = 18, gap = 8, pw = W - ML - MR;
    double h = (double)rows * (rh + gap);
    snprintf(id, sizeof id, "segments-%u", c->figure++);
    fprintf(c->f, "<figure%s>\n", fig_attrs ? fig_attrs : "");
    svg_open(c, h + 12, id, label);
    for (size_t r = 0; r < rows; r++)
        fprintf(c->f, "<text class=\"axis\" x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\" dominant-baseline=\"middle\">%s</text>\n",
                ML - 6, 6 + (double)r * (rh + gap) + rh / 2, TICK((uint64_t)r * row));
    uint64_t off = 0;
    double unit = pw / (double)row;
    for (size_t i = 0; i < l->n_segments; i++) {
        const od_layout_segment *seg = &l->segments[i];
        const od_layout_block *b = l->blocks + seg->first_block;
        int busy = seg->n_blocks > 0;
        uint64_t used = 0;
        for (size_t k = 0; k < seg->n_blocks; k++)
            used += b[k].size;
        uint64_t freeb = seg->size > used ? seg->size - used : 0;
        fprintf(c->f, "<g><title>segment at 0x%llx: %s, %zu busy block%s: %s in use, %s free%s</title>",
                (unsigned long long)seg->address, IEC(seg->size), seg->n_blocks, seg->n_blocks == 1 ? "" : "s",
                IEC(used), IEC(freeb), busy && freeb ? " (stranded: empty_cache() cannot release it)" : "");
        /* Free runs between busy blocks, and runs of busy blocks of one state, merged. */
        uint64_t pos = 0;
        size_t k = 0;
        while (pos < seg->size) {
            uint64_t bstart = k < seg->n_blocks ? b[k].address - seg->address : seg->size;
            if (bstart > seg->size)
                bstart = seg->size;
            if (bstart > pos) {
                uint64_t len = bstart - pos;
                if (len > *largest_free)
                    *largest_free = len;
                *free_total += len;
                strip(c, off + pos, off + bstart, row, unit, rh, gap, busy ? SP_STRAND : SP_FREE);
                pos = bstart;
                continue;
            }
            span_kind kind = b[k].state == OD_BLOCK_ACTIVE_ALLOCATED ? SP_ALLOC : SP_PEND;
            uint64_t end = pos + b[k].size;
            k++;
            while (k < seg->n_blocks && b[k].address - seg->address == end &&
                   (b[k].state == OD_BLOCK_ACTIVE_ALLOCATED ? SP_ALLOC : SP_PEND) == kind)
                end += b[k++].size;
            if (end > seg->size || end <= pos)
                end = seg->size;
            strip(c, off + pos, off + end, row, unit, rh, gap, kind);
            pos = end;
        }
        /* The segment's start, as a thin gap. */
        uint64_t r = off / row;
        double sx = ML + (double)(off - r * row) * unit;
        fprintf(c->f, "<line class=\"sep\" x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\"/></g>\n", sx,
                6 + (double)r * (rh + gap), sx, 6 + (double)r * (rh + gap) + rh);
        off += seg->size;
    }
    fprintf(c->f, "</svg>\n<ul class=\"legend\"><li><span class=\"sw a\"></span>allocated</li>"
                  "<li><span class=\"sw p\"></span>freed, waiting for its stream (pending free)</li>"
                  "<li><span class=\"sw x\"></span>free but stranded: inside a segment that still holds live blocks, "
                  "so <code>empty_cache()</code> cannot release it</li>"
                  "<li><span class=\"sw f\"></span>free in an idle segment (releasable)</li></ul>\n");
    fprintf(c->f, "<figcaption>%zu segments in address order, laid out left to right; each row is %s, a thin gap "
                  "starts each segment.", l->n_segments, TICK(row));
}

static void end_map(ctx *c, const od_snapshot *s, const od_device_summary *d, size_t item)
{
    char attrs[96]; /* evidence about the end's segments links here (evidence_moment) */
    snprintf(attrs, sizeof attrs, " data-map=\"end\" data-item=\"%zu\" data-device=\"%lld\"", item, (long long)d->device);
    od_layout *l = final_layout(s, d->device);
    uint64_t largest, freeb;
    if (!l)
        return;
    segment_map(c, l, "segment map at the end: blocks by state", attrs, &largest, &freeb);
    fprintf(c->f, " Reserved %s, allocated %s, stranded %s, largest free block %s.", IEC(d->reserved_bytes),
            IEC(d->allocated_bytes), IEC(d->stranded_bytes), IEC(d->largest_free_block_bytes));
    for (size_t i = 0; i < d->n_ooms && i < 1; i++) {
        const od_oom_event *o = &d->ooms[i];
        uint64_t free_all = d->reserved_bytes - d->active_bytes;
        if (o->size_bytes > d->largest_free_block_bytes && o->size_bytes <= free_all)
            fprintf(c->f, " The failed request of %s exceeds the largest free block although %s is free in all: "
                          "fragmentation.", IEC(o->size_bytes), IEC(free_all));
        else if (o->size_bytes > d->largest_free_block_bytes)
            fprintf(c->f, " The failed request of %s exceeds every free block (largest %s).", IEC(o->size_bytes),
                    IEC(d->largest_free_block_bytes));
    }
    fprintf(c->f, "</figcaption>\n</figure>\n");
    od_layout_free(l);
}

/* Moments the allocator-state slider steps through: about this many entries evenly over
 * the trace, and the peak; fewer when the blocks of all would pass STATE_BLOCKS. */
#define STATE_SAMPLES 120
#define STATE_BLOCKS 60000

static int cmp_size(const void *pa, const void *pb)
{
    size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
    return a < b ? -1 : a > b;
}

/* The segments and busy blocks (od_layout_at) at sampled entries, for the page's
 * slider, as JSON beside the segment map at the peak (map_id):
 *   i, t      the entry and its time (delta from the trace's first)
 *   r, u      reserved and busy bytes
 *   s         per segment in address order: size, number of busy blocks, its stream and
 *             pool (an index into homes)
 *   b         per busy block: offset in its segment, size, state (1 allocated, 2 pending free) */
/* A segment's stream and pool: from the snapshot's own segment at that address when it
 * is still there at the end, else the stream of the trace's segment event that made it
 * (its pool is then unknown). */
typedef struct {
    uint64_t stream;
    int64_t pool[2];
    int known_pool;
} seg_home;

typedef struct {
    uint64_t addr, stream;
} seg_event;

static int cmp_seg_event(const void *pa, const void *pb)
{
    const seg_event *a = pa, *b = pb;
    return a->addr < b->addr ? -1 : a->addr > b->addr;
}

static seg_home home_of(const od_snapshot *s, int64_t device, const seg_event *ev, size_t n_ev, uint64_t addr)
{
    seg_home h = {0, {0, 0}, 0};
    size_t lo = 0, hi = s->n_segments; /* segments sorted by (device, address) */
    while (lo < hi) {
        size_t m = lo + (hi - lo) / 2;
        const od_segment *g = &s->segments[m];
        if (g->device < device || (g->device == device && g->address < addr))
            lo = m + 1;
        else
            hi = m;
    }
    if (lo < s->n_segments && s->segments[lo].device == device && s->segments[lo].address == addr) {
        h.stream = s->segments[lo].stream;
        h.pool[0] = s->segments[lo].pool_id[0];
        h.pool[1] = s->segments[lo].pool_id[1];
        h.known_pool = 1;
        return h;
    }
    lo = 0, hi = n_ev;
    while (lo < hi) {
        size_t m = lo + (hi - lo) / 2;
        if (ev[m].addr < addr)
            lo = m + 1;
        else
            hi = m;
    }
    if (lo < n_ev && ev[lo].addr == addr)
        h.stream = ev[lo].stream;
    return h;
}

static od_status state_data(ctx *c, const od_device_summary *d, size_t peak_blocks, const char *map_id, od_error *err)
{
    const od_trace *t = d->trace;
    const od_snapshot *snap = t->snap;
    seg_event *ev = NULL;
    seg_home *homes = NULL;
    size_t n_ev = 0, n_homes = 0, cap_homes = 0;
    size_t n = t->n_entries, k = STATE_SAMPLES;
    if (peak_blocks * k > STATE_BLOCKS)
        k = STATE_BLOCKS / (peak_blocks ? peak_blocks : 1);
    if (k < 8)
        k = 8;
    if (k > n)
        k = n;
    size_t *at = malloc((k + 1) * sizeof *at), m = 0;
    if (!at)
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < k; i++)
        at[m++] = k > 1 ? (size_t)((double)i * (double)(n - 1) / (double)(k - 1)) : n - 1;
    at[m++] = t->peak_index;
    od_sort(at, m, sizeof *at, cmp_size);
    size_t u = 0;
    for (size_t i = 0; i < m; i++)
        if (!u || at[i] != at[u - 1])
            at[u++] = at[i];
    FILE *f = c->f;
    od_status st = OD_OK;
    for (size_t i = 0; i < n; i++) {
        uint8_t act = od_trace_action(t->entries, i);
        n_ev += act == OD_ACT_SEGMENT_ALLOC || act == OD_ACT_SEGMENT_MAP;
    }
    ev = malloc((n_ev ? n_ev : 1) * sizeof *ev);
    if (!ev) {
        free(at);
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    }
    n_ev = 0;
    for (size_t i = 0; i < n; i++) {
        od_trace_entry x = od_trace_at(t->entries, i);
        if (x.action == OD_ACT_SEGMENT_ALLOC || x.action == OD_ACT_SEGMENT_MAP)
            ev[n_ev++] = (seg_event){x.addr, x.stream};
    }
    od_sort(ev, n_ev, sizeof *ev, cmp_seg_event);
    fprintf(f, "<script type=\"application/json\" class=\"od-state\" data-for=\"%s\">\n{\"entries\":%zu,\"peak\":%zu,"
               "\"from_replay\":%d,\"samples\":[", map_id, n, t->peak_index, t->blocks_from_replay);
    for (size_t i = 0; i < u && st == OD_OK; i++) {
        od_layout *l = NULL;
        st = od_layout_at(t, at[i], &l, err);
        if (st != OD_OK)
            break;
        uint64_t tt = od_trace_at(t->entries, at[i]).time_us;
        fprintf(f, "%s\n{\"i\":%zu,\"t\":%llu,\"r\":%llu,\"u\":%llu,\"o\":%zu,\"s\":[", i ? "," : "", at[i],
                (unsigned long long)(tt > d->first_time_us ? tt - d->first_time_us : 0),
                (unsigned long long)l->reserved_bytes, (unsigned long long)l->busy_bytes, l->orphans);
        for (size_t g = 0; g < l->n_segments && st == OD_OK; g++) {
            seg_home h = home_of(snap, t->device, ev, n_ev, l->segments[g].address);
            size_t hk = 0;
            while (hk < n_homes && !(homes[hk].stream == h.stream && homes[hk].pool[0] == h.pool[0] &&
                                     homes[hk].pool[1] == h.pool[1] && homes[hk].known_pool == h.known_pool))
                hk++;
            if (hk == n_homes) {
                if (n_homes == cap_homes) {
                    size_t cap = cap_homes ? 2 * cap_homes : 8;
                    seg_home *nh = realloc(homes, cap * sizeof *nh);
                    if (!nh) {
                        st = od_fail(err, OD_ERR_NOMEM, "out of memory");
                        break;
                    }
                    homes = nh;
                    cap_homes = cap;
                }
                homes[n_homes++] = h;
            }
            fprintf(f, "%s%llu,%zu,%zu", g ? "," : "", (unsigned long long)l->segments[g].size, l->segments[g].n_blocks, hk);
        }
        fprintf(f, "],\"b\":[");
        size_t w = 0;
        for (size_t g = 0; g < l->n_segments; g++) {
            const od_layout_segment *sg = &l->segments[g];
            for (size_t j = 0; j < sg->n_blocks; j++) {
                const od_layout_block *b = &l->blocks[sg->first_block + j];
                fprintf(f, "%s%llu,%llu,%d", w++ ? "," : "", (unsigned long long)(b->address - sg->address),
                        (unsigned long long)b->size, b->state == OD_BLOCK_ACTIVE_ALLOCATED ? 1 : 2);
            }
        }
        fprintf(f, "]}");
        od_layout_free(l);
    }
    /* the streams and pools the segments belong to, as the s triples' last member */
    fprintf(f, "],\n\"homes\":[");
    for (size_t hk = 0; hk < n_homes; hk++) {
        const seg_home *h = &homes[hk];
        char text[160];
        if (h->known_pool)
            snprintf(text, sizeof text, "stream %llu, %s pool (%lld, %lld)", (unsigned long long)h->stream,
                     od_pool_kind_name(od_pool_kind_of(h->pool[0], h->pool[1])), (long long)h->pool[0],
                     (long long)h->pool[1]);
        else
            snprintf(text, sizeof text, "stream %llu, pool not recorded (segment released before the snapshot)",
                     (unsigned long long)h->stream);
        fprintf(f, "%s", hk ? "," : "");
        jstr(f, text);
    }
    fprintf(f, "]}\n</script>\n");
    c->scripted = 1;
    free(at);
    free(ev);
    free(homes);
    return st;
}

static od_status peak_map(ctx *c, const od_snapshot *s, const od_device_summary *d, od_error *err)
{
    od_layout *l = NULL;
    uint64_t largest, freeb;
    const od_trace *t = d->trace;
    od_status st = od_layout_at(t, t->peak_index, &l, err);
    if (st != OD_OK)
        return st == OD_ERR_NOMEM ? st : OD_OK; /* an impossible index only means no map */
    if (l->reserved_bytes) {
        fprintf(c->f, "<h3>Segment map at the peak</h3>\n");
        segment_map(c, l, "segment map at the peak: blocks by state", NULL, &largest, &freeb);
        fprintf(c->f, " Rebuilt from the trace at entry %zu (+%.3f s): reserved %s, busy %s (%s), free %s, largest "
                      "free run %s.",
                t->peak_index, (double)(t->peak_time_us - d->first_time_us) / 1e6, IEC(l->reserved_bytes),
                IEC(l->busy_bytes),
                t->blocks_from_replay ? "block sizes from the allocator replay, which reproduces the run"
                                      : "requests rounded to 512 B; a real block can be a little larger",
                IEC(freeb), IEC(largest));
        if (l->orphans)
            fprintf(c->f, " %zu busy block%s fell outside every segment and %s not drawn.", l->orphans,
                    l->orphans == 1 ? "" : "s", l->orphans == 1 ? "is" : "are");
        fprintf(c->f, "</figcaption>\n");
        char id[48];
        snprintf(id, sizeof id, "segments-%u", c->figure - 1);
        st = state_data(c, d, l->n_blocks + l->n_segments, id, err);
        fprintf(c->f, "</figure>\n");
    }
    od_layout_free(l);
    return st;
}

/* ---------- site tables ---------- */

static void site_table(ctx *c, const char *title, const od_site_list *l)
{

    if (!l->n)
        return;
    fprintf(c->f, "<h3>%s</h3>\n<table><tr><th class=\"n\">bytes</th><th class=\"n\">requested</th>"
                  "<th class=\"n\">count</th><th>site (where)</th></tr>\n", title);
    uint64_t ob = 0, orq = 0, oc = 0;
    for (size_t i = 0; i < l->n; i++) {
        const od_site_total *st = &l->items[i];
        if (i >= c->top) {
            ob += st->bytes, orq += st->requested_bytes, oc += st->count;
            continue;
        }
        fprintf(c->f, "<tr><td class=\"n\">%s</td><td class=\"n\">%s</td><td class=\"n\">%llu</td><td><code>",
                IEC(st->bytes), IEC(st->requested_bytes), (unsigned long long)st->count);
        esc(c->f, st->site);
        fprintf(c->f, "</code>");
        if (strcmp(st->site, st->where) != 0) {
            fprintf(c->f, " <span class=\"muted\">(<code>");
            esc(c->f, st->where);
            fprintf(c->f, "</code>)</span>");
        }
        fprintf(c->f, "</td></tr>\n");
    }
    if (l->n > c->top)
        fprintf(c->f, "<tr><td class=\"n\">%s</td><td class=\"n\">%s</td><td class=\"n\">%llu</td><td>%zu other sites</td></tr>\n",
                IEC(ob), IEC(orq), (unsigned long long)oc, l->n - c->top);
    fprintf(c->f, "</table>\n");
}

/* ---------- snapshot sections ---------- */

static od_status snapshot_section(ctx *c, const od_report_item *it, const od_summary *sum, od_error *err)
{

    const od_snapshot *s = it->snapshot;
    fprintf(c->f, "<section class=\"snapshot\">\n<h2>Snapshot <code>");
    esc(c->f, it->name);
    fprintf(c->f, "</code></h2>\n<p class=\"muted\">torch %s snapshot; allocator settings: ",
            s->torch_major == 1 ? "1.13" : "2.x");
    esc(c->f, !s->settings.present ? "not recorded" : s->settings.alloc_conf[0] ? s->settings.alloc_conf : "default");
    fprintf(c->f, ".</p>\n");
    if (!sum->n_devices)
        fprintf(c->f, "<p>No device holds memory in this snapshot.</p>\n");
    for (size_t i = 0; i < sum->n_devices; i++) {
        const od_device_summary *d = &sum->devices[i];
        if (sum->n_devices > 1)
            fprintf(c->f, "<h3>Device %lld</h3>\n", (long long)d->device);
        fprintf(c->f, "<h3>Memory over time</h3>\n");
        if (!d->has_trace || !d->entries) {
            fprintf(c->f, "<p>This snapshot has no trace for this device, so there is no timeline "
                          "(record one with <code>torch.cuda.memory._record_memory_history()</code>).</p>\n");
        } else {
            od_timeline *t = NULL;
            od_status st = od_timeline_build(s, d, c->points, c->top, &t, err);
            if (st != OD_OK)
                return st;
            replay_view rv;
            run_replay(c, s, d, &rv);
            st = timeline_plot(c, d, t, it, &rv, err);
            if (st != OD_OK) {
                od_timeline_free(t);
                return st;
            }
            if (t->n_iterations) {
                fprintf(c->f, "<h3>Per iteration</h3>\n");
                iterations_plot(c, t, it->name, d->device);
            }
            od_timeline_free(t);
        }
        if (d->has_trace && d->entries && d->trace->has_peak) {
            od_status st = peak_map(c, s, d, err);
            if (st != OD_OK)
                return st;
        }
        fprintf(c->f, "<h3>Segment map at the end</h3>\n");
        if (d->reserved_bytes)
            end_map(c, s, d, (size_t)(it - c->in->items));
        else
            fprintf(c->f, "<p>No memory reserved at the end.</p>\n");
        site_table(c, d->trace->blocks_from_replay ? "Live at the peak, by site (block sizes)"
                                                   : "Live at the peak, by site (requests rounded to 512 B)",
                   &d->peak_sites);
        site_table(c, "Live at the end, by site", &d->top_sites);

    }
    fprintf(c->f, "</section>\n");
    return OD_OK;
}

static void glance_rows(ctx *c, const od_report_item *it, const od_summary *sum)
{

    for (size_t i = 0; i < sum->n_devices; i++) {
        const od_device_summary *d = &sum->devices[i];
        fprintf(c->f, "<tr><td><code>");
        esc(c->f, it->name);
        fprintf(c->f, "</code></td><td class=\"n\">%lld</td>", (long long)d->device);
        if (d->has_trace && d->entries)
            fprintf(c->f, "<td class=\"n\">%s</td>", IEC(d->trace->peak_block_bytes));
        else
            fprintf(c->f, "<td class=\"n\">&ndash;</td>");
        fprintf(c->f, "<td class=\"n\">%s</td><td class=\"n\">%s</td><td class=\"n\">%s</td><td class=\"n\">%s</td><td>",
                IEC(d->reserved_bytes), IEC(d->allocated_bytes), IEC(d->stranded_bytes),
                IEC(d->largest_free_block_bytes));
        if (!d->n_ooms)
            fprintf(c->f, "none");
        for (size_t k = 0; k < d->n_ooms; k++)
            fprintf(c->f, "%s%s", k ? ", " : "", IEC(d->ooms[k].size_bytes));
        fprintf(c->f, "</td></tr>\n");
    }
}

/* ---------- compare ---------- */

/* A signed byte change: "+1.00 GiB", "&minus;512.00 MiB", "0". */
static void delta_cell(FILE *f, uint64_t before, uint64_t after)
{
    if (after == before)
        fprintf(f, "<td class=\"n\">0</td>");
    else if (after > before)
        fprintf(f, "<td class=\"n\">+%s</td>", IEC(after - before));
    else
        fprintf(f, "<td class=\"n\">&minus;%s</td>", IEC(before - after));
}

/* Two snapshots side by side (the first is "before"): their figures, both timelines of
 * live bytes on one axis (time since each trace's first entry), and live bytes at each
 * peak by site (snapdiff.h) and by category (categorize.h). */
static od_status compare_section(ctx *c, const od_report_item *ia, const od_summary *a, const od_report_item *ib,
                                 const od_summary *b, od_error *err)
{
    FILE *f = c->f;
    od_snapdiff *df = NULL;
    od_status st = od_snapdiff_compute(a, b, &df, err);
    if (st != OD_OK)
        return st;
    fprintf(f, "<section class=\"compare\">\n<h2>Compare <code>");
    esc(f, ia->name);
    fprintf(f, "</code> (before) and <code>");
    esc(f, ib->name);
    fprintf(f, "</code> (after)</h2>\n");
    for (size_t k = 0; k < df->n_devices && st == OD_OK; k++) {
        const od_device_change *ch = &df->devices[k];
        if (ch->device_before < 0 || ch->device_after < 0)
            continue;
        const od_device_summary *da = NULL, *db = NULL;
        for (size_t i = 0; i < a->n_devices; i++)
            if (a->devices[i].device == ch->device_before)
                da = &a->devices[i];
        for (size_t i = 0; i < b->n_devices; i++)
            if (b->devices[i].device == ch->device_after)
                db = &b->devices[i];
        if (!da || !db)
            continue;
        if (df->n_devices > 1)
            fprintf(f, "<h3>Device %lld and device %lld</h3>\n", (long long)ch->device_before, (long long)ch->device_after);
        fprintf(f, "<table><tr><th></th><th class=\"n\">before</th><th class=\"n\">after</th><th class=\"n\">change</th></tr>\n");
        static const char *const rows[] = {"peak live requested (trace)", "reserved at the end", "allocated at the end",
                                           "stranded at the end", "segments at the end"};
        const uint64_t *vals[] = {ch->peak, ch->reserved, ch->allocated, ch->stranded, ch->segments};
        for (size_t r = 0; r < 5; r++) {
            if (r == 0 && (!ch->have_peak[0] || !ch->have_peak[1]))
                continue;
            if (r == 4) {
                uint64_t x = vals[r][0], y = vals[r][1];
                fprintf(f, "<tr><td>%s</td><td class=\"n\">%llu</td><td class=\"n\">%llu</td><td class=\"n\">%s%llu</td></tr>\n",
                        rows[r], (unsigned long long)x, (unsigned long long)y, y > x ? "+" : y < x ? "&minus;" : "",
                        (unsigned long long)(y > x ? y - x : x - y));
                continue;
            }
            fprintf(f, "<tr><td>%s</td><td class=\"n\">%s</td><td class=\"n\">%s</td>", rows[r], IEC(vals[r][0]),
                    IEC(vals[r][1]));
            delta_cell(f, vals[r][0], vals[r][1]);
            fprintf(f, "</tr>\n");
        }
        fprintf(f, "</table>\n");

        /* Both timelines on one axis. */
        od_timeline *ta = NULL, *tb = NULL;
        if (da->has_trace && da->entries && db->has_trace && db->entries) {
            st = od_timeline_build(ia->snapshot, da, c->points, c->top, &ta, err);
            if (st == OD_OK)
                st = od_timeline_build(ib->snapshot, db, c->points, c->top, &tb, err);
        }
        if (st == OD_OK && ta && tb) {
            uint64_t span = ta->last_time_us - ta->first_time_us, sb = tb->last_time_us - tb->first_time_us;
            uint64_t top = ta->peak_live_bytes > tb->peak_live_bytes ? ta->peak_live_bytes : tb->peak_live_bytes;
            if (sb > span)
                span = sb;
            if (!span)
                span = 1;
            uint64_t step = od_byte_step(top ? top : 1, 6);
            frame fr = {0, span, od_round_up(top, step), MT, 260};
            int ms = (double)span / 1e6 < 2;
            char id[48];
            snprintf(id, sizeof id, "compare-%u", c->figure++);
            fprintf(f, "<h3>Both timelines on one axis</h3>\n<figure>\n");
            svg_open(c, fr.top + fr.h + MB, id, "live bytes over time of both snapshots on one axis");
            y_axis(c, fr.top, fr.h, fr.ymax, step, NULL);
            x_axis(c, fr.top, fr.h, 0, (double)span, ms ? 1e-3 : 1e-6, ms ? " ms" : " s",
                   "time since each trace's first entry", 0);
            const od_timeline *tt[2] = {ta, tb};
            for (int sd = 0; sd < 2; sd++) {
                fprintf(f, "<path class=\"ml m%d\" d=\"", sd);
                for (size_t i = 0; i < tt[sd]->n_points; i++)
                    fprintf(f, "%c%.1f %.1f", i ? 'L' : 'M', fx(&fr, tt[sd]->time_us[i] - tt[sd]->first_time_us),
                            fy(&fr, tt[sd]->live_bytes[i]));
                fprintf(f, "\"><title>live bytes, %s</title></path>\n", sd ? "after" : "before");
            }
            fprintf(f, "</svg>\n<ul class=\"legend\"><li><span class=\"sw s0\"></span>before: <code>");
            esc(f, ia->name);
            fprintf(f, "</code> &mdash; peak %s in blocks</li><li><span class=\"sw s1\"></span>after: <code>",
                    IEC(ta->peak_live_bytes));
            esc(f, ib->name);
            fprintf(f, "</code> &mdash; peak %s in blocks</li></ul>\n<figcaption>Live bytes (blocks) of each trace over the time "
                       "since its own first entry.</figcaption>\n</figure>\n", IEC(tb->peak_live_bytes));
        }
        od_timeline_free(ta);
        od_timeline_free(tb);
        if (st != OD_OK)
            break;

        /* Live at each peak, by site and by category. */
        if (ch->n_at_peak) {
            fprintf(f, "<h3>Live at the peak, by site</h3>\n<table><tr><th class=\"n\">before</th><th class=\"n\">after</th>"
                       "<th class=\"n\">change</th><th>site</th></tr>\n");
            for (size_t i = 0; i < ch->n_at_peak && i < 2 * c->top; i++) {
                const od_site_change *sc = &ch->at_peak[i];
                fprintf(f, "<tr><td class=\"n\">%s</td><td class=\"n\">%s</td>", IEC(sc->before_bytes), IEC(sc->after_bytes));
                delta_cell(f, sc->before_bytes, sc->after_bytes);
                fprintf(f, "<td><code>");
                esc(f, sc->site);
                fprintf(f, "</code></td></tr>\n");
            }
            fprintf(f, "</table>\n");
        }
        if (da->has_trace && da->entries && db->has_trace && db->entries) {
            /* the diagnosis's categories when it was given (borrowed), else made here */
            const od_snapshot_findings *fa = c->in->diagnosed ? od_diagnosis_findings(c->in->diagnosed, ia->input, da->device) : NULL;
            const od_snapshot_findings *fb = c->in->diagnosed ? od_diagnosis_findings(c->in->diagnosed, ib->input, db->device) : NULL;
            od_categories *own_a = NULL, *own_b = NULL;
            const od_categories *ca = fa ? fa->categories : NULL, *cb = fb ? fb->categories : NULL;
            if (!ca && (st = od_categorize(da->trace, SIZE_MAX, &own_a, err)) == OD_OK)
                ca = own_a;
            if (st == OD_OK && !cb && (st = od_categorize(db->trace, SIZE_MAX, &own_b, err)) == OD_OK)
                cb = own_b;
            if (st == OD_OK) {
                fprintf(f, "<h3>Live at the peak, by category</h3>\n<table><tr><th>category</th><th class=\"n\">before</th>"
                           "<th class=\"n\">after</th><th class=\"n\">change</th></tr>\n");
                for (int k2 = 0; k2 < OD_CAT_COUNT; k2++) {
                    if (!ca->bytes[k2] && !cb->bytes[k2])
                        continue;
                    fprintf(f, "<tr><td>%s</td><td class=\"n\">%s</td><td class=\"n\">%s</td>",
                            od_category_name((od_category)k2), IEC(ca->bytes[k2]), IEC(cb->bytes[k2]));
                    delta_cell(f, ca->bytes[k2], cb->bytes[k2]);
                    fprintf(f, "</tr>\n");
                }
                fprintf(f, "<tr><td>total</td><td class=\"n\">%s</td><td class=\"n\">%s</td>", IEC(ca->total_bytes),
                        IEC(cb->total_bytes));
                delta_cell(f, ca->total_bytes, cb->total_bytes);
                fprintf(f, "</tr>\n</table>\n");
            }
            od_categories_free(own_a);
            od_categories_free(own_b);
        }
    }
    fprintf(f, "</section>\n");
    od_snapdiff_free(df);
    return st;
}

/* ---------- plan ---------- */

static void plan_section(ctx *c, const od_report_plan *p)
{
    char id[48];
    fprintf(c->f, "<section class=\"plan\">\n<h2>Plan</h2>\n");
    if (p->title) {
        fprintf(c->f, "<p>");
        esc(c->f, p->title);
        fprintf(c->f, "</p>\n");
    }
    uint64_t sum = 0;
    for (size_t i = 0; i < p->n; i++)
        sum += p->bytes[i];
    uint64_t top = sum;
    if (p->device_bytes > top)
        top = p->device_bytes;
    if (p->capacity_bytes > top)
        top = p->capacity_bytes;
    uint64_t step = od_byte_step(top ? top : 1, 8);
    uint64_t xmax = od_round_up(top, step);
    double pw = W - ML - MR, bar_y = 20, bar_h = 44;
    snprintf(id, sizeof id, "plan-%u", c->figure++);
    fprintf(c->f, "<figure>\n");
    svg_open(c, 120, id, "planned memory by purpose against the device");
    for (uint64_t v = 0; v <= xmax; v += step) {
        double x = ML + (double)v / (double)xmax * pw;
        fprintf(c->f, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\"/><text class=\"axis\" x=\"%.1f\" "
                      "y=\"%.0f\" text-anchor=\"middle\">%s</text>\n", x, bar_y - 6, x, bar_y + bar_h + 6, x,
                bar_y + bar_h + 22, TICK(v));
        if (v > xmax - step)
            break;
    }
    double x = ML;
    for (size_t i = 0; i < p->n; i++) {
        double w = (double)p->bytes[i] / (double)xmax * pw;
        fprintf(c->f, "<rect class=\"s%zu\" x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" height=\"%.0f\"><title>", i % 8, x, bar_y, w, bar_h);
        esc(c->f, p->category[i]);
        fprintf(c->f, ": %s</title></rect>\n", IEC(p->bytes[i]));
        x += w;
    }
    if (p->device_bytes) {
        double dx = ML + (double)p->device_bytes / (double)xmax * pw;
        fprintf(c->f, "<line class=\"res\" x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\"/>\n", dx, bar_y - 12, dx,
                bar_y + bar_h + 8);
    }
    if (p->capacity_bytes) {
        double cx = ML + (double)p->capacity_bytes / (double)xmax * pw;
        fprintf(c->f, "<line class=\"cap\" x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\"/><text class=\"oom\" x=\"%.1f\" "
                      "y=\"%.0f\" text-anchor=\"end\">device %s</text>\n",
                cx, bar_y - 12, cx, bar_y + bar_h + 8, cx - 4, bar_y - 4, IEC(p->capacity_bytes));
    }
    fprintf(c->f, "</svg>\n<ul class=\"legend\">\n");
    for (size_t i = 0; i < p->n; i++) {
        fprintf(c->f, "<li><span class=\"sw s%zu\"></span>", i % 8);
        esc(c->f, p->category[i]);
        fprintf(c->f, " &mdash; %s</li>\n", IEC(p->bytes[i]));
    }
    if (p->device_bytes)
        fprintf(c->f, "<li><span class=\"sw rs\"></span>device memory in use (reserve + CUDA context): %s</li>\n",
                IEC(p->device_bytes));
    if (p->capacity_bytes)
        fprintf(c->f, "<li><span class=\"sw om\"></span>the device's memory: %s</li>\n", IEC(p->capacity_bytes));
    fprintf(c->f, "</ul>\n<figcaption>Predicted peak allocated %s", IEC(sum));
    if (p->capacity_bytes && p->device_bytes)
        fprintf(c->f, "; %s", p->device_bytes <= p->capacity_bytes ? "fits" : "does not fit");
    fprintf(c->f, ".</figcaption>\n</figure>\n</section>\n");
}

/* ---------- step logs ---------- */

static void series_section(ctx *c, const od_report_item *it)
{
    char id[48];
    const od_series *s = it->series;
    fprintf(c->f, "<section class=\"series\">\n<h2>Memory log <code>");
    esc(c->f, it->name);
    fprintf(c->f, "</code></h2>\n");
    if (s->n < 1) {
        fprintf(c->f, "<p>The log has no rows.</p>\n</section>\n");
        return;
    }
    double x0 = s->x[0], x1 = s->x[s->n - 1];
    if (x1 <= x0)
        x1 = x0 + 1;
    uint64_t top = 0;
    for (int m = 0; m < OD_METRIC_COUNT; m++)
        for (size_t i = 0; s->y[m] && i < s->n; i++)
            if (s->y[m][i] > (double)top)
                top = (uint64_t)s->y[m][i];
    od_metric pm = od_series_primary(s);
    od_trend_fit fit;
    int have_fit = od_trend_analyze(s, pm, c->in->capacity_bytes, &fit, NULL) == OD_OK;
    uint64_t step = od_byte_step(top ? top : 1, 6);
    uint64_t ymax = od_round_up(top, step);
    double h = 260, pw = W - ML - MR;
    snprintf(id, sizeof id, "series-%u", c->figure++);
    fprintf(c->f, "<figure>\n");
    svg_open(c, MT + h + MB, id, "memory per step");
    y_axis(c, MT, h, ymax, step, NULL);
    x_axis(c, MT, h, x0, x1, 1, s->time_indexed ? " s" : "", s->time_indexed ? "time (s)" : "step", !s->time_indexed);
    static const char *const names[OD_METRIC_COUNT] = {"allocated", "used (device)", "reserved", "peak"};
    int k = 0;
    int drawn[OD_METRIC_COUNT] = {0};
    for (int m = 0; m < OD_METRIC_COUNT; m++) {
        if (!s->y[m])
            continue;
        drawn[m] = k;
        fprintf(c->f, "<path class=\"ml m%d\" d=\"", k++ % 4);
        /* Long series: the highest value of each of c->points intervals. */
        size_t per = s->n / c->points + 1, first = 1;
        for (size_t i = 0; i < s->n; i += per) {
            size_t best = i;
            for (size_t j = i; j < i + per && j < s->n; j++)
                if (s->y[m][j] > s->y[m][best])
                    best = j;
            double px = ML + (s->x[best] - x0) / (x1 - x0) * pw;
            double py = MT + h - s->y[m][best] / (double)ymax * h;
            fprintf(c->f, "%c%.1f %.1f", first ? 'M' : 'L', px, py);
            first = 0;
        }
        fprintf(c->f, "\"><title>%s</title></path>\n", names[m]);
    }
    if (have_fit) {
        double a = fit.x_first, z = fit.x_last;
        double ya = fit.intercept + fit.growth_per_x * a, yz = fit.intercept + fit.growth_per_x * z;
        ya = ya < 0 ? 0 : ya > (double)ymax ? (double)ymax : ya;
        yz = yz < 0 ? 0 : yz > (double)ymax ? (double)ymax : yz;
        fprintf(c->f, "<path class=\"fit\" d=\"M%.1f %.1fL%.1f %.1f\"><title>trend fit</title></path>\n",
                ML + (a - x0) / (x1 - x0) * pw, MT + h - ya / (double)ymax * h, ML + (z - x0) / (x1 - x0) * pw,
                MT + h - yz / (double)ymax * h);
    }
    fprintf(c->f, "</svg>\n<ul class=\"legend\">\n");
    for (int m = 0; m < OD_METRIC_COUNT; m++)
        if (s->y[m])
            fprintf(c->f, "<li><span class=\"sw s%d\"></span>%s</li>\n", drawn[m] % 4, names[m]);
    if (have_fit)
        fprintf(c->f, "<li><span class=\"sw om\" style=\"border-top-style:dashed\"></span>trend fit (%s)</li>\n",
                names[pm]);
    fprintf(c->f, "</ul>\n<figcaption>%zu rows.", s->n);
    if (have_fit) {
        double g = fit.growth_per_x;
        fprintf(c->f, " Trend of %s: <strong>%s</strong>, %s%s per %s (r&sup2; %.3f, %zu warm-up point%s left out).",
                names[pm], od_trend_verdict_name(fit.verdict), g < 0 ? "&minus;" : "+", IEC((uint64_t)fabs(g)),
                s->time_indexed ? "second" : "step", fit.r2, fit.warmup_points, fit.warmup_points == 1 ? "" : "s");
        if (fit.have_projection)
            fprintf(c->f, " At this rate %s is reached %s %.0f%s.", IEC(c->in->capacity_bytes),
                    s->time_indexed ? "in" : "at step", fit.projected_oom, s->time_indexed ? " s" : "");
    }
    fprintf(c->f, "</figcaption>\n</figure>\n</section>\n");
}

/* ---------- profiler records ---------- */

static void rank_table(ctx *c, const char *title, const char *what, const od_profile_ranking *r, const char *count)
{
    if (!r->n)
        return;
    fprintf(c->f, "<h3>%s</h3>\n<table><tr><th>%s</th><th class=\"n\">bytes</th>", title, what);
    if (count)
        fprintf(c->f, "<th class=\"n\">%s</th>", count);
    fprintf(c->f, "</tr>\n");
    for (size_t i = 0; i < r->n && i < 10; i++) {
        fprintf(c->f, "<tr><td><code>");
        esc(c->f, r->v[i].name);
        fprintf(c->f, "</code></td><td class=\"n\">%s%s</td>", r->v[i].bytes < 0 ? "&minus;" : "",
                IEC((uint64_t)(r->v[i].bytes < 0 ? -r->v[i].bytes : r->v[i].bytes)));
        if (count)
            fprintf(c->f, "<td class=\"n\">%llu</td>", (unsigned long long)r->v[i].count);
        fprintf(c->f, "</tr>\n");
    }
    fprintf(c->f, "</table>\n");
}

static od_status profile_section(ctx *c, const od_report_item *it, od_error *err)
{
    static const char *const titles[OD_PROFILE_KIND_COUNT] = {
        "PyTorch profiler trace", "PyTorch memory timeline", "PyTorch key_averages table",
        "JAX device memory profile", "JAX memory_stats", "BFC allocator log",
    };
    const od_profile *p = it->profile;
    fprintf(c->f, "<section class=\"profile\">\n<h2>%s <code>", titles[p->kind]);
    esc(c->f, it->name);
    fprintf(c->f, "</code></h2>\n");
    if (p->n_points) {
        const od_profile *ph = it->phases ? it->phases : p;
        char id[48];
        snprintf(id, sizeof id, "profile-%u", c->figure++);
        fprintf(c->f, "<figure>\n");
        od_status st = od_profile_svg_write(c->f, p, ph->n_spans ? ph : NULL, c->points, id, 0, err);
        if (st != OD_OK)
            return st;
        fprintf(c->f, "<figcaption>Peak %s at %.1f ms", IEC(p->peak_allocated_bytes), p->peak_time_us / 1000.0);
        if (ph->n_spans && ph == p)
            fprintf(c->f, ", during %s", od_phase_name(p->peak_phase));
        if (p->reserved_bytes)
            fprintf(c->f, "; reserved peaks at %s", IEC(p->peak_reserved_bytes));
        if (ph->n_spans)
            fprintf(c->f, ". Shaded: forward, backward and optimizer phases%s", ph == p ? "" : " from the trace");
        fprintf(c->f, ".</figcaption>\n</figure>\n");
    } else if (p->kind == OD_PROFILE_TORCH_TRACE) {
        fprintf(c->f, "<p>No GPU memory events: record with <code>torch.profiler.profile(profile_memory=True)</code>.</p>\n");
    }
    if (p->kind == OD_PROFILE_TORCH_TIMELINE && p->n_points) {
        fprintf(c->f, "<h3>At the peak, by category</h3>\n<table><tr><th>category</th><th class=\"n\">bytes</th>"
                      "<th class=\"n\">share</th></tr>\n");
        for (int k = 0; k < OD_PCAT_COUNT; k++)
            fprintf(c->f, "<tr><td><span class=\"sw\" style=\"background:%s\"></span>%s</td><td class=\"n\">%s</td>"
                          "<td class=\"n\">%.1f%%</td></tr>\n",
                    od_profile_category_color((od_profile_category)k), od_profile_category_name((od_profile_category)k),
                    IEC(p->peak_category_bytes[k]),
                    p->peak_allocated_bytes ? 100.0 * (double)p->peak_category_bytes[k] / (double)p->peak_allocated_bytes : 0.0);
        fprintf(c->f, "<tr><td>total</td><td class=\"n\">%s</td><td class=\"n\">100%%</td></tr>\n</table>\n",
                IEC(p->peak_allocated_bytes));
    }
    if (p->kind == OD_PROFILE_TORCH_TRACE && p->n_points) {
        if (p->n_steps) {
            fprintf(c->f, "<h3>Per optimizer step</h3>\n<table><tr><th class=\"n\">step</th><th class=\"n\">peak</th>"
                          "<th class=\"n\">allocated after</th></tr>\n");
            for (size_t i = 0; i < p->n_steps; i++)
                fprintf(c->f, "<tr><td class=\"n\">%zu</td><td class=\"n\">%s</td><td class=\"n\">%s</td></tr>\n", i + 1,
                        IEC(p->steps[i].peak_allocated_bytes), IEC(p->steps[i].allocated_bytes));
            fprintf(c->f, "</table>\n");
        }
        rank_table(c, "Live at the peak, by operator", "innermost operator", &p->ops_at_peak, "allocations");
        if (p->with_stack)
            rank_table(c, "Live at the peak, by source line", "innermost frame outside libraries", &p->sources_at_peak,
                       "allocations");
        fprintf(c->f, "<p class=\"muted\">%s of the peak was allocated before the trace started.</p>\n",
                IEC(p->peak_untracked_bytes));
    }
    if (p->kind == OD_PROFILE_TORCH_TABLE)
        rank_table(c, "Self device memory by operator (as printed, rounded)", "operator", &p->ops_self, "calls");
    if (p->kind == OD_PROFILE_JAX_PPROF) {
        fprintf(c->f, "<p>%s live in %llu buffers.</p>\n", IEC(p->live_bytes), (unsigned long long)p->live_buffers);
        rank_table(c, "Live by kind", "kind", &p->by_kind, "buffers");
        rank_table(c, "Live by source line", "innermost frame outside libraries", &p->by_source, "buffers");
    }
    if (p->kind == OD_PROFILE_JAX_STATS) {
        const od_profile_stats *s = &p->stats;
        fprintf(c->f, "<table>\n");
#define ROW(k) if (s->has_##k) fprintf(c->f, "<tr><td><code>" #k "</code></td><td class=\"n\">%s</td></tr>\n", IEC(s->k));
        ROW(bytes_in_use) ROW(peak_bytes_in_use) ROW(largest_free_block_bytes) ROW(bytes_limit) ROW(pool_bytes)
#undef ROW
        fprintf(c->f, "</table>\n");
    }
    if (p->kind == OD_PROFILE_BFC_LOG && p->bfc.has_request)
        fprintf(c->f, "<p>Allocator <code>%s</code> ran out of memory allocating %s.</p>\n",
                p->bfc.allocator[0] ? p->bfc.allocator : "?", IEC(p->bfc.requested_bytes));
    fprintf(c->f, "</section>\n");
    return OD_OK;
}

/* ---------- OOM messages ---------- */

static void triage_section(ctx *c, const od_report_item *it)
{

    const od_triage *t = it->triage;
    fprintf(c->f, "<section class=\"triage\">\n<h2>OOM messages in <code>");
    esc(c->f, it->name);
    fprintf(c->f, "</code></h2>\n");
    if (!t->n_reports) {
        fprintf(c->f, "<p>No OOM report found.</p>\n</section>\n");
        return;
    }
    fprintf(c->f, "<table><tr><th class=\"n\">line</th><th>framework</th><th>verdict</th><th class=\"n\">requested</th>"
                  "<th class=\"n\">capacity</th><th class=\"n\">allowed</th><th class=\"n\">free</th>"
                  "<th class=\"n\">allocated</th><th class=\"n\">reserved, unallocated</th></tr>\n");
    for (size_t i = 0; i < t->n_reports; i++) {
        const od_oom_report *r = &t->reports[i];
        fprintf(c->f, "<tr><td class=\"n\">%llu</td><td>%s</td><td><strong>%s</strong></td>", (unsigned long long)r->line,
                od_framework_name(r->framework), od_oom_verdict_name(r->verdict));
        const struct { unsigned bit; uint64_t v; } cols[] = {
            {OD_HAVE_REQUESTED, r->requested_bytes}, {OD_HAVE_CAPACITY, r->capacity_bytes},
            {OD_HAVE_ALLOWED, r->allowed_bytes}, {OD_HAVE_FREE, r->free_bytes},
            {OD_HAVE_ALLOCATED, r->allocated_bytes}, {OD_HAVE_RESERVED_UNALLOC, r->reserved_unallocated_bytes},
        };
        for (size_t k = 0; k < sizeof cols / sizeof cols[0]; k++)
            fprintf(c->f, "<td class=\"n\">%s</td>", r->have & cols[k].bit ? IEC(cols[k].v) : "&ndash;");
        fprintf(c->f, "</tr>\n");
    }
    fprintf(c->f, "</table>\n<p class=\"muted\">Figures are read as printed (two decimals: rounded).</p>\n</section>\n");
}

/* ---------- diagnosis ---------- */

static const char *jstr_of(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

/* One list of remedies of the diagnosis document: what, its effect, how it was checked
 * (the method and what the check found), and the command that shows it. */
static void fixes(ctx *c, const char *title, const json_t *arr)
{
    if (!json_array_size(arr))
        return;
    fprintf(c->f, "<h3>%s</h3>\n<ol class=\"fixes\">\n", title);
    size_t i;
    const json_t *m;
    json_array_foreach(arr, i, m) {
        const json_t *ck = json_object_get(m, "check");
        const char *method = jstr_of(ck, "method"), *detail = jstr_of(ck, "detail");
        fprintf(c->f, "<li>");
        esc(c->f, jstr_of(m, "action"));
        if (*jstr_of(m, "effect")) {
            fprintf(c->f, " <span class=\"muted\">&mdash; ");
            esc(c->f, jstr_of(m, "effect"));
            fprintf(c->f, "</span>");
        }
        if (*method && strcmp(method, "none") != 0) {
            fprintf(c->f, "<br><span class=\"check\">checked (");
            esc(c->f, method);
            fprintf(c->f, "): ");
            esc(c->f, detail);
            fprintf(c->f, "</span>");
        } else if (*detail) {
            fprintf(c->f, "<br><span class=\"check muted\">");
            esc(c->f, detail);
            fprintf(c->f, "</span>");
        }
        if (*jstr_of(m, "command")) {
            fprintf(c->f, "<br><code class=\"cmd\">$ ");
            esc(c->f, jstr_of(m, "command"));
            fprintf(c->f, "</code>");
        }
        fprintf(c->f, "</li>\n");
    }
    fprintf(c->f, "</ol>\n");
}

/* What an evidence sentence talks about, in the snapshot it names ("NAME: ..."; "tried:
 * ..." sentences are about the first snapshot): on its timeline, the entry it names
 * ("entry N"), else the peak when it speaks of the peak, else the iterations from the
 * first boundary to the last (returns 1, the time range in [*a, *b], trace clock); else,
 * when it speaks of free blocks or stranded memory, the segment map at the end (returns
 * 2). Fills the item and the device; 0 when there is nothing to link to. */
static int evidence_moment(const ctx *c, od_summary *const *sums, const char *ev, size_t *item, int64_t *device,
                           uint64_t *a, uint64_t *b)
{
    const od_report_input *in = c->in;
    size_t k = in->n_items;
    for (size_t i = 0; i < in->n_items && k == in->n_items; i++) {
        size_t len = strlen(in->items[i].name);
        if (sums[i] && strncmp(ev, in->items[i].name, len) == 0 && ev[len] == ':')
            k = i;
    }
    if (k == in->n_items && strncmp(ev, "tried:", 6) == 0)
        for (size_t i = 0; i < in->n_items && k == in->n_items; i++)
            if (sums[i])
                k = i;
    if (k == in->n_items || !sums[k]->n_devices)
        return 0;
    *item = k;
    *device = sums[k]->devices[0].device;
    *a = *b = 0;
    const od_device_summary *d = NULL;
    for (size_t i = 0; i < sums[k]->n_devices && !d; i++)
        if (sums[k]->devices[i].has_trace && sums[k]->devices[i].entries)
            d = &sums[k]->devices[i];
    if (!d)
        d = &sums[k]->devices[0];
    *device = d->device;
    const od_trace *t = d->trace;
    const char *e = t && t->has_trace ? strstr(ev, "entry ") : NULL;
    char *end;
    unsigned long long n = e ? strtoull(e + 6, &end, 10) : 0;
    if (e && end != e + 6 && n < t->n_entries) {
        *a = *b = od_trace_at(t->entries, n).time_us;
    } else if (strstr(ev, "peak") && t && t->has_trace && t->has_peak) {
        *a = *b = t->peak_time_us;
    } else if (strstr(ev, "iteration") && t && t->has_trace && t->n_boundaries >= 2) {
        *a = od_trace_at(t->entries, t->boundaries[0]).time_us;
        *b = od_trace_at(t->entries, t->boundaries[t->n_boundaries - 1]).time_us;
    } else if ((strstr(ev, "free block") || strstr(ev, "stranded")) && d->reserved_bytes) {
        return 2; /* the segment map at the end */
    } else {
        return 0;
    }
    return d->has_trace && d->entries ? 1 : 0;
}

/* One evidence item on the page, linked (by the page's script) to the moment of the
 * timeline it talks about. */
typedef struct {
    ctx *c;
    od_summary *const *sums;
    int open;
} evidence_page;

static void evidence_item(void *arg, const char *input, int first, const char *shown, const char *text)
{
    evidence_page *pg = arg;
    ctx *c = pg->c;
    if (first) {
        if (pg->open)
            fprintf(c->f, "</ul>\n");
        if (input) {
            fprintf(c->f, "<p class=\"ev-input\"><code>");
            esc(c->f, input);
            fprintf(c->f, "</code></p>\n");
        }
        fprintf(c->f, "<ul>\n");
        pg->open = 1;
    }
    size_t item;
    int64_t device;
    uint64_t a, b;
    int to = evidence_moment(c, pg->sums, text, &item, &device, &a, &b);
    if (to == 1)
        fprintf(c->f, "<li><span class=\"od-ev\" data-item=\"%zu\" data-device=\"%lld\" data-a=\"%llu\" "
                      "data-b=\"%llu\">", item, (long long)device, (unsigned long long)a, (unsigned long long)b);
    else if (to == 2)
        fprintf(c->f, "<li><span class=\"od-ev\" data-item=\"%zu\" data-device=\"%lld\" data-map=\"end\">", item,
                (long long)device);
    else
        fprintf(c->f, "<li><span>");
    esc(c->f, shown);
    fprintf(c->f, "</span></li>\n");
}

/* The diagnosis, from doctor's document: embedded whole for scripts and tests, and shown. */
static od_status diagnosis_section(ctx *c, const json_t *doc, od_summary *const *sums, od_error *err)
{
    char *text = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_ESCAPE_SLASH);
    if (!text)
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    /* JSON_ESCAPE_SLASH writes every '/' as '\/': no "</script>" can end the block early */
    fprintf(c->f, "<script type=\"application/json\" id=\"od-diagnosis\">\n%s\n</script>\n", text);
    free(text);
    const char *verdict = json_string_value(json_object_get(doc, "verdict"));
    int ok = verdict && strcmp(verdict, "healthy") == 0;
    fprintf(c->f, "<section class=\"diagnosis card\">\n<h2>Diagnosis: <span class=\"verdict%s\">", ok ? " ok" : "");
    esc(c->f, verdict ? verdict : "unknown");
    fprintf(c->f, "</span></h2>\n");
    if (*jstr_of(doc, "headline")) {
        fprintf(c->f, "<p><strong>");
        esc(c->f, jstr_of(doc, "headline"));
        fprintf(c->f, "</strong></p>\n");
    }
    /* Evidence grouped by input as doctor's text groups it: each name once, above its items. */
    if (json_array_size(json_object_get(doc, "evidence"))) {
        fprintf(c->f, "<h3>Evidence</h3>\n");
        evidence_page pg = {c, sums, 0};
        od_diagnosis_each_evidence(doc, evidence_item, &pg);
        if (pg.open)
            fprintf(c->f, "</ul>\n");
    }
    fixes(c, "Do now", json_object_get(doc, "do_now"));
    fixes(c, "Long term", json_object_get(doc, "long_term"));
    if (*jstr_of(doc, "verify")) {
        fprintf(c->f, "<h3>Verify</h3>\n<p>");
        esc(c->f, jstr_of(doc, "verify"));
        if (*jstr_of(doc, "verify_command")) {
            fprintf(c->f, "<br><code class=\"cmd\">$ ");
            esc(c->f, jstr_of(doc, "verify_command"));
            fprintf(c->f, "</code>");
        }
        fprintf(c->f, "</p>\n");
    }
    fprintf(c->f, "</section>\n");
    return OD_OK;
}

/* ---------- the page ---------- */

od_status od_report_write(const od_report_input *in, FILE *f, od_error *err)
{
    ctx c = {f, in, in->max_points ? in->max_points : OD_REPORT_DEFAULT_POINTS,
             in->top_sites ? in->top_sites : OD_REPORT_DEFAULT_SITES, 0, 0};
    if (c.points < 2)
        return od_fail(err, OD_ERR_ARG, "a plot needs at least 2 points");
    if (c.top > 8)
        c.top = 8; /* the palette has 8 distinct colours */
    for (size_t i = 0; i < in->n_items; i++) {
        const od_report_item *it = &in->items[i];
        if ((it->kind == OD_REPORT_SNAPSHOT && !it->snapshot) || (it->kind == OD_REPORT_SERIES && !it->series) ||
            (it->kind == OD_REPORT_TRIAGE && !it->triage) || (it->kind == OD_REPORT_PROFILE && !it->profile) ||
            !it->name)
            return od_fail(err, OD_ERR_ARG, "report input %zu has no data", i);
    }
    od_summary **sums = calloc(in->n_items ? in->n_items : 1, sizeof *sums);
    if (!sums)
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    od_status st = OD_OK;
    size_t n_snap = 0;
    /* The diagnosis's summaries when it was given (borrowed), else made here. */
    uint8_t *own = calloc(in->n_items ? in->n_items : 1, 1);
    if (!own) {
        free(sums);
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < in->n_items && st == OD_OK; i++)
        if (in->items[i].kind == OD_REPORT_SNAPSHOT) {
            const od_summary *ds = in->diagnosed ? od_diagnosis_summary(in->diagnosed, in->items[i].input) : NULL;
            if (ds)
                sums[i] = (od_summary *)ds;
            else if ((st = od_summarize(in->items[i].snapshot, &sums[i], err)) == OD_OK)
                own[i] = 1;
            n_snap++;
        }
    if (st != OD_OK)
        goto out;

    fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
               "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
               "<meta name=\"color-scheme\" content=\"light dark\">\n<title>oomdoc report");
    if (in->n_items) {
        fprintf(f, ": ");
        esc(f, in->items[0].name);
        if (in->n_items > 1)
            fprintf(f, " and %zu more", in->n_items - 1);
    }
    fprintf(f, "</title>\n<style>\n%s</style>\n</head>\n<body>\n<header>\n<h1>oomdoc report</h1>\n<p class=\"muted\">", OD_REPORT_CSS);
    for (size_t i = 0; i < in->n_items; i++) {
        fprintf(f, "%s<code>", i ? ", " : "Inputs: ");
        esc(f, in->items[i].name);
        fprintf(f, "</code>");
    }
    fprintf(f, "%soomdoc %s", in->n_items ? ". " : "", OD_VERSION);
    if (in->generated) {
        fprintf(f, ", ");
        esc(f, in->generated);
    }
    fprintf(f, ".</p>\n</header>\n");

    if (in->diagnosis && (st = diagnosis_section(&c, in->diagnosis, sums, err)) != OD_OK)
        goto out;
    if (n_snap) {
        fprintf(f, "<section class=\"glance\">\n<h2>At a glance</h2>\n<table><tr><th>snapshot</th><th class=\"n\">device</th>"
                   "<th class=\"n\">peak live</th><th class=\"n\">reserved</th><th class=\"n\">allocated</th>"
                   "<th class=\"n\">stranded</th><th class=\"n\">largest free block</th><th>OOM requests</th></tr>\n");
        for (size_t i = 0; i < in->n_items; i++)
            if (sums[i])
                glance_rows(&c, &in->items[i], sums[i]);
        fprintf(f, "</table>\n<p class=\"muted\">Peak live: allocated block bytes at the trace's peak (what max_memory_allocated() reports). Reserved, allocated, stranded "
                   "(free inside segments that hold live blocks) and the largest free block: at the end.</p>\n</section>\n");
    }
    for (size_t i = 0; i < in->n_items && st == OD_OK; i++)
        if (sums[i])
            st = snapshot_section(&c, &in->items[i], sums[i], err);
    if (st != OD_OK)
        goto out;
    /* Two snapshots or more: each after the first compared with it. */
    for (size_t i = 0, first = in->n_items; i < in->n_items && st == OD_OK; i++) {
        if (!sums[i])
            continue;
        if (first == in->n_items)
            first = i;
        else
            st = compare_section(&c, &in->items[first], sums[first], &in->items[i], sums[i], err);
    }
    if (st != OD_OK)
        goto out;
    if (in->plan)
        plan_section(&c, in->plan);
    for (size_t i = 0; i < in->n_items && st == OD_OK; i++) {
        if (in->items[i].kind == OD_REPORT_SERIES)
            series_section(&c, &in->items[i]);
        else if (in->items[i].kind == OD_REPORT_TRIAGE)
            triage_section(&c, &in->items[i]);
        else if (in->items[i].kind == OD_REPORT_PROFILE)
            st = profile_section(&c, &in->items[i], err);
    }
    if (st != OD_OK)
        goto out;
    fprintf(f, "<footer><p class=\"muted\">Sizes in IEC units (1 MiB = 1024 KiB). Hover a plot element for details."
               "</p></footer>\n");
    /* The script only enhances what is drawn: without it the page is the same plots. */
    if (c.scripted)
        fprintf(f, "<script>\n%s</script>\n", OD_REPORT_JS);
    fprintf(f, "</body>\n</html>\n");
    fflush(f);
    if (ferror(f))
        st = od_fail(err, OD_ERR_IO, "writing the report failed");
out:
    for (size_t i = 0; i < in->n_items; i++)
        if (own[i])
            od_summary_free(sums[i]);
    free(own);
    free(sums);
    return st;
}
