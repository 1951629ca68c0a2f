/* profilesvg.h - a profiler record's memory over time as one inline SVG chart, for the HTML
 * report and `oomdoc profile --svg`: bytes per category stacked (a memory timeline), or
 * allocated as an area with reserved as a line (a trace), with the training phases shaded
 * behind (forward, backward, optimizer) and the peak marked.
 *
 * Phases come from a trace: the timeline's own when it is one, or a trace of the same run
 * given as `phases`, lined up on the epoch clock both files carry (od_profile's
 * origin_epoch_us). Timelines are downsampled to max_points, keeping every bin's highest
 * point and the peak itself, so the page stays small. Output depends only on the inputs.
 *
 * Nothing is kept or freed: the profiles stay the caller's. */
#ifndef OD_PROFILESVG_H
#define OD_PROFILESVG_H

#include <stdio.h>

#include "oomdoc/od.h"
#include "read/profile.h"

#define OD_PROFILE_SVG_POINTS 1000

/* Write the <svg> element to out. phases may be NULL or the timeline itself; max_points 0
 * means OD_PROFILE_SVG_POINTS; id (may be NULL) becomes the element's id. standalone adds
 * the SVG namespace a .svg file needs (inline SVG in HTML must not name any URL). Fails
 * with OD_ERR_ARG when the timeline has no points, OD_ERR_NOMEM, OD_ERR_IO when writing
 * fails. */
od_status od_profile_svg_write(FILE *out, const od_profile *timeline, const od_profile *phases,
                               size_t max_points, const char *id, int standalone, od_error *err);

/* Fill colour of a category (a CSS colour name), shared with the report's legends. */
const char *od_profile_category_color(od_profile_category c);

#endif
