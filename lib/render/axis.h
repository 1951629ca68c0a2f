/* axis.h - the arithmetic of a plot's axes, for the static page (report.c) and, in the same
 * words, for its script (report_util.js: the JS copy gives the same text for the same values
 * and carries the same guards; tests/data/axis_cases.json is the table both test suites
 * read). Pure functions; strings are written into the caller's buffer. */
#ifndef OD_AXIS_H
#define OD_AXIS_H

#include <stddef.h>
#include <stdint.h>

/* Largest byte count whose label is computed exactly: the script computes in doubles, whose
 * integers are exact to 2^53, and multiplies by 100. Above it a label is the plain count. */
#define OD_TICK_EXACT_MAX ((((uint64_t)1 << 53) - 1) / 100)

/* A byte-axis label: the largest unit in which v needs at most two decimals, exactly
 * ("512 MiB", "1.25 GiB", "1152 MiB", never a rounded figure); "0" for 0; "N B" beyond
 * OD_TICK_EXACT_MAX. Writes at most size bytes into buf and returns buf. */
const char *od_tick_label(uint64_t v, char *buf, size_t size);

/* A power-of-two byte step for about `ticks` gridlines up to max (so labels are IEC-round):
 * the smallest 2^k with max / 2^k <= ticks (integer division), never above 2^62. */
uint64_t od_byte_step(uint64_t max, int ticks);

/* v rounded up to a multiple of step (step itself for 0; v when that would overflow). */
uint64_t od_round_up(uint64_t v, uint64_t step);

/* A 1-2-5 step for about `ticks` gridlines over span (1 for an empty or absurd span). */
double od_nice_step(double span, int ticks);

#endif
