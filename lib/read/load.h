/* load.h - whatever the user has, read once: one input's kind decided from its bytes
 * (inputkind.h's order) and what it holds parsed, for every command that takes any input
 * (doctor, report, trend) and the library's callers (the Python package).
 *
 * The caller opens the stream (files, stdin, progress are the caller's); od_load reads it
 * to its end, in bounded memory for snapshots and text (a snapshot is streamed into its
 * loader, a log and a step log are fed to their parsers chunk by chunk). A BFC allocator
 * log is read twice (triage, then its allocator figures): from a second stream the
 * caller's reopener opens (a regular file), else from a copy held here.
 *
 * od_load fills a caller-owned od_loaded that od_loaded_free frees (a zeroed one is fine);
 * on failure nothing is left to free and err says why, with the byte offset for a parser's
 * error. */
#ifndef OD_LOAD_H
#define OD_LOAD_H

#include "oomdoc/input.h"
#include "oomdoc/snapshot.h"
#include "read/inputkind.h"
#include "read/models.h"
#include "read/profile.h"
#include "read/trend.h"
#include "read/triage/triage.h"

/* What an input is, as the diagnosis reads it. */
typedef enum {
    OD_INPUT_LOG,       /* text: OOM reports, memory_summary, memory_stats, nvidia-smi */
    OD_INPUT_SERIES,    /* per-step log or NVML series */
    OD_INPUT_SNAPSHOT,  /* torch.cuda.memory._dump_snapshot() pickle */
    OD_INPUT_CONFIG,    /* a model's config.json */
    OD_INPUT_PROFILE,   /* a profiler record (profile.h): trace, memory timeline,
                           key_averages table, JAX memory profile or memory_stats */
    OD_INPUT_NOTHING    /* nothing recognized */
} od_input_kind;

/* "log", "series", "snapshot", "config", "profile", "unrecognized". */
const char *od_input_kind_name(od_input_kind k);

typedef struct {
    const char *name;         /* the caller's: the input as shown (od_load leaves it) */
    od_input_kind kind;
    od_file_kind file_kind;   /* inputkind.h's finer kind */
    od_triage *triage;        /* OD_INPUT_LOG (a BFC log's OOM line too) */
    od_series *series;        /* OD_INPUT_SERIES */
    od_trend_fit fit;         /* OD_INPUT_SERIES, when have_fit: its primary column's trend */
    int have_fit;
    od_snapshot *snapshot;    /* OD_INPUT_SNAPSHOT */
    od_model model;           /* OD_INPUT_CONFIG, when have_model: as the planner reads it */
    int have_model;           /* 0: a config.json the planner cannot read (listed only) */
    char model_error[240];    /* why not, when have_model is 0 */
    od_profile *profile;      /* OD_INPUT_PROFILE, or a BFC log's allocator figures */
    od_error series_error;    /* a text that is no series: why the series reader refused it
                                 (status OD_OK when it was one, or was not text) */
} od_loaded;

/* Opens the same input again from its first byte, for a second pass; NULL when it cannot
 * (a pipe). close gives back what open returned. */
typedef struct {
    od_input *(*open)(void *ctx, od_error *err);
    void (*close)(void *ctx, od_input *in);
    void *ctx;
} od_reopener;

/* Read in to its end and fill *out. again: NULL, or a reopener for a second pass. Fails
 * with the parser's status (OD_ERR_FORMAT, OD_ERR_REFUSED, OD_ERR_LIMIT with the offset),
 * OD_ERR_IO, OD_ERR_NOMEM; a text without anything recognized is OD_INPUT_NOTHING, not a
 * failure. */
od_status od_load(od_input *in, const od_reopener *again, od_loaded *out, od_error *err);

/* Free what l holds and zero it (NULL or a zeroed one is fine). */
void od_loaded_free(od_loaded *l);

/* Read all of in into a malloc'd, NUL-terminated buffer (*len excludes the NUL), under the
 * line-break rule of every text input (base/lines.h): for a config.json given alone.
 * Fails with OD_ERR_LIMIT at the offset of a run without a line break, OD_ERR_IO,
 * OD_ERR_NOMEM. */
od_status od_load_text(od_input *in, char **text, size_t *len, od_error *err);

#endif
