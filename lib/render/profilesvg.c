/* profilesvg.c - a profiler record's memory over time as inline SVG (see profilesvg.h). */
#include "render/profilesvg.h"

#include <stdlib.h>
#include <string.h>

#include "base/units.h"

#define W 960.0
#define H 360.0
#define ML 78.0   /* left margin: y labels */
#define MR 16.0
#define MT 22.0
#define MB 66.0   /* bottom: x labels and two legend rows */

/* torch's own palette for these categories (_memory_profiler._CATEGORY_TO_COLORS), with
 * input in dim grey instead of black so that it shows on a dark page too. */
static const char *const cat_colors[OD_PCAT_COUNT] = {
    "darkgreen", "goldenrod", "dimgray", "mediumpurple", "red", "mediumblue", "royalblue", "grey",
};
static const char *const phase_colors[OD_PHASE_COUNT] = {"none", "#4e79a7", "#f28e2b", "#59a14f"};

const char *od_profile_category_color(od_profile_category c)
{
    return (unsigned)c < OD_PCAT_COUNT ? cat_colors[c] : "grey";
}

typedef struct {
    double t_max_us, y_max;
} scale;

static double sx(const scale *s, double t_us)
{
    double f = s->t_max_us > 0 ? t_us / s->t_max_us : 0;
    if (f < 0)
        f = 0;
    if (f > 1)
        f = 1;
    return ML + f * (W - ML - MR);
}

static double sy(const scale *s, double bytes)
{
    double f = s->y_max > 0 ? bytes / s->y_max : 0;
    if (f > 1)
        f = 1;
    return H - MB - f * (H - MB - MT);
}

/* The points to draw: per bin the index with the highest total, plus the peak. */
static size_t pick_points(const od_profile *p, size_t max_points, size_t *idx)
{
    size_t n = p->n_points, k = 0;
    if (n <= max_points) {
        for (size_t i = 0; i < n; i++)
            idx[k++] = i;
        return k;
    }
    for (size_t b = 0; b < max_points; b++) {
        size_t lo = n * b / max_points, hi = n * (b + 1) / max_points;
        if (hi <= lo)
            continue;
        size_t best = lo;
        for (size_t i = lo; i < hi; i++)
            if (p->allocated_bytes[i] > p->allocated_bytes[best])
                best = i;
        if (p->peak_index >= lo && p->peak_index < hi)
            best = p->peak_index;
        idx[k++] = best;
    }
    return k;
}

static uint64_t stacked(const od_profile *p, size_t i, int upto)
{
    uint64_t s = 0;
    for (int c = 0; c < upto; c++)
        s += p->category_bytes[c][i];
    return s;
}

/* The phases of a trace, shaded behind everything (ph: where they come from). */
static void svg_phases(FILE *out, const scale *s, const od_profile *tl, const od_profile *ph)
{
    char a[32];
    if (ph && ph->n_spans) {
        double shift = 0;
        if (ph != tl && ph->has_epoch && tl->has_epoch)
            shift = ph->origin_epoch_us - tl->origin_epoch_us;
        fprintf(out, "<g class=\"phases\">\n");
        for (size_t i = 0; i < ph->n_spans; i++) {
            const od_profile_span *sp = &ph->spans[i];
            if (sp->phase == OD_PHASE_OTHER)
                continue;
            double x0 = sx(s, sp->start_us + shift), x1 = sx(s, sp->end_us + shift);
            if (x1 - x0 < 0.05)
                continue;
            fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\" fill-opacity=\"0.16\">"
                         "<title>%s %.3f-%.3f ms, peak %s</title></rect>\n",
                    x0, MT, x1 - x0, H - MB - MT, phase_colors[sp->phase], od_phase_name(sp->phase),
                    (sp->start_us + shift) / 1000.0, (sp->end_us + shift) / 1000.0,
                    od_format_iec(sp->peak_allocated_bytes, a, sizeof a));
            if (x1 - x0 >= 46)
                fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" fill=\"currentColor\" opacity=\"0.7\">%s</text>\n",
                        x0 + 3, MT + 11, od_phase_name(sp->phase));
        }
        fprintf(out, "</g>\n");
    }
}

/* Axes, grid lines and their labels. */
static void svg_axes(FILE *out, const scale *s)
{
    char a[32];
    fprintf(out, "<g class=\"axes\" font-size=\"11\" fill=\"currentColor\" stroke=\"currentColor\">\n");
    /* Ticks at round binary sizes: a power-of-two multiple of 1 MiB, at most 6 steps. */
    double step = 1048576.0;
    while (s->y_max / step > 6)
        step *= 2;
    for (int i = 0; i * step <= s->y_max && i <= 64; i++) {
        double v = i * step;
        double y = sy(s, v);
        fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke-opacity=\"0.15\"/>"
                     "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" stroke=\"none\">%s</text>\n",
                ML, y, W - MR, y, ML - 6, y + 4, od_format_iec((uint64_t)v, a, sizeof a));
    }
    for (int i = 0; i <= 5; i++) {
        double t = s->t_max_us * i / 5.0;
        double x = sx(s, t);
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" stroke=\"none\">%.1f ms</text>\n", x,
                H - MB + 16, i == 0 ? "start" : i == 5 ? "end" : "middle", t / 1000.0);
    }
    fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke-opacity=\"0.5\"/>\n", ML, H - MB, W - MR,
            H - MB);
    fprintf(out, "</g>\n");

}

/* The memory itself: one band per category (a timeline), or allocated and reserved. */
static void svg_series(FILE *out, const scale *s, const od_profile *tl, const size_t *idx, size_t k, int cats)
{
    char a[32];
    if (cats) {
        /* One band per category, bottom to top in torch's order. */
        fprintf(out, "<g class=\"categories\">\n");
        for (int c = 0; c < OD_PCAT_COUNT; c++) {
            int any = 0;
            for (size_t j = 0; j < k && !any; j++)
                any = tl->category_bytes[c][idx[j]] != 0;
            if (!any)
                continue;
            fprintf(out, "<polygon fill=\"%s\" fill-opacity=\"0.75\" points=\"", cat_colors[c]);
            for (size_t j = 0; j < k; j++)
                fprintf(out, "%.1f,%.1f ", sx(s, tl->time_us[idx[j]]), sy(s, (double)stacked(tl, idx[j], c + 1)));
            for (size_t j = k; j-- > 0;)
                fprintf(out, "%.1f,%.1f ", sx(s, tl->time_us[idx[j]]), sy(s, (double)stacked(tl, idx[j], c)));
            fprintf(out, "\"><title>%s at the peak: %s</title></polygon>\n", od_profile_category_name((od_profile_category)c),
                    od_format_iec(tl->peak_category_bytes[c], a, sizeof a));
        }
        fprintf(out, "</g>\n");
    } else {
        fprintf(out, "<polygon class=\"allocated\" fill=\"steelblue\" fill-opacity=\"0.6\" points=\"");
        for (size_t j = 0; j < k; j++)
            fprintf(out, "%.1f,%.1f ", sx(s, tl->time_us[idx[j]]), sy(s, (double)tl->allocated_bytes[idx[j]]));
        fprintf(out, "%.1f,%.1f %.1f,%.1f\"><title>allocated</title></polygon>\n", sx(s, tl->time_us[idx[k - 1]]),
                sy(s, 0), sx(s, tl->time_us[idx[0]]), sy(s, 0));
        if (tl->reserved_bytes) {
            fprintf(out, "<polyline class=\"reserved\" fill=\"none\" stroke=\"darkorange\" stroke-width=\"1.5\" points=\"");
            for (size_t j = 0; j < k; j++)
                fprintf(out, "%.1f,%.1f ", sx(s, tl->time_us[idx[j]]), sy(s, (double)tl->reserved_bytes[idx[j]]));
            fprintf(out, "\"><title>reserved, peak %s</title></polyline>\n",
                    od_format_iec(tl->peak_reserved_bytes, a, sizeof a));
        }
    }
}

/* The peak, marked and labelled. */
static void svg_peak(FILE *out, const scale *s, const od_profile *tl)
{
    char b[32];
    double px = sx(s, tl->peak_time_us), py = sy(s, (double)tl->peak_allocated_bytes);
    fprintf(out, "<g class=\"od-peak\"><circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"crimson\"/>"
                 "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"currentColor\" text-anchor=\"%s\">peak %s at %.1f ms</text></g>\n",
            px, py, px + (px > W / 2 ? -8 : 8), py - 6 < MT + 10 ? MT + 10 : py - 6, px > W / 2 ? "end" : "start",
            od_format_iec(tl->peak_allocated_bytes, b, sizeof b), tl->peak_time_us / 1000.0);
}

/* The legend: categories or series, then phases. */
static void svg_legend(FILE *out, const od_profile *tl, const od_profile *ph, int cats)
{
    fprintf(out, "<g class=\"legend\" font-size=\"11\" fill=\"currentColor\">\n");
    double lx = ML;
    double ly = H - 26;
    if (cats) {
        for (int c = 0; c < OD_PCAT_COUNT; c++) {
            const char *nm = od_profile_category_name((od_profile_category)c);
            fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"10\" height=\"10\" fill=\"%s\" fill-opacity=\"0.75\"/>"
                         "<text x=\"%.1f\" y=\"%.1f\">%s</text>\n", lx, ly - 9, cat_colors[c], lx + 13, ly, nm);
            lx += 20 + 7.4 * (double)strlen(nm);
        }
    } else {
        fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"10\" height=\"10\" fill=\"steelblue\" fill-opacity=\"0.6\"/>"
                     "<text x=\"%.1f\" y=\"%.1f\">allocated</text>\n", lx, ly - 9, lx + 13, ly);
        lx += 80;
        if (tl->reserved_bytes) {
            fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"10\" height=\"3\" fill=\"darkorange\"/>"
                         "<text x=\"%.1f\" y=\"%.1f\">reserved</text>\n", lx, ly - 5, lx + 13, ly);
            lx += 76;
        }
    }
    lx = ML;
    ly = H - 8;
    if (ph && ph->n_spans)
        for (int q = OD_PHASE_FORWARD; q < OD_PHASE_COUNT; q++) {
            fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"10\" height=\"10\" fill=\"%s\" fill-opacity=\"0.3\"/>"
                         "<text x=\"%.1f\" y=\"%.1f\">%s</text>\n", lx, ly - 9, phase_colors[q], lx + 13, ly,
                    od_phase_name((od_phase)q));
            lx += 20 + 7.4 * (double)strlen(od_phase_name((od_phase)q));
        }
    fprintf(out, "</g>\n");
}

od_status od_profile_svg_write(FILE *out, const od_profile *tl, const od_profile *ph, size_t max_points,
                               const char *id, int standalone, od_error *err)
{
    if (!tl || tl->n_points == 0)
        return od_fail(err, OD_ERR_ARG, "no memory timeline to draw");
    if (max_points == 0)
        max_points = OD_PROFILE_SVG_POINTS;
    size_t *idx = malloc((tl->n_points < max_points ? tl->n_points : max_points) * sizeof *idx);
    if (!idx)
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    size_t k = pick_points(tl, max_points, idx);
    int cats = tl->category_bytes[0] != NULL;
    scale s;
    s.t_max_us = tl->time_us[tl->n_points - 1];
    if (s.t_max_us <= 0)
        s.t_max_us = 1;
    double top = (double)tl->peak_allocated_bytes;
    if (tl->reserved_bytes && (double)tl->peak_reserved_bytes > top)
        top = (double)tl->peak_reserved_bytes;
    s.y_max = top > 0 ? top * 1.08 : 1;
    char a[32];

    fprintf(out, "<svg%s", standalone ? " xmlns=\"http://www.w3.org/2000/svg\"" : "");
    if (id) {
        /* ids are the caller's own tokens; keep only characters an id needs */
        fputs(" id=\"", out);
        for (const char *q = id; *q; q++)
            if ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || (*q >= '0' && *q <= '9') || *q == '-' || *q == '_')
                fputc(*q, out);
        fputc('"', out);
    }
    fprintf(out, " class=\"od-profile\" viewBox=\"0 0 %.0f %.0f\" role=\"img\" aria-label=\"memory over time, peak %s\">\n",
            W, H, od_format_iec(tl->peak_allocated_bytes, a, sizeof a));
    /* Phases behind everything. */
    if (!ph && tl->n_spans)
        ph = tl;
    svg_phases(out, &s, tl, ph);
    svg_axes(out, &s);
    svg_series(out, &s, tl, idx, k, cats);
    svg_peak(out, &s, tl);
    svg_legend(out, tl, ph, cats);
    fprintf(out, "</svg>\n");
    free(idx);
    if (ferror(out))
        return od_fail(err, OD_ERR_IO, "writing the chart failed");
    return OD_OK;
}
