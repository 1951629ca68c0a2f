/* inputkind.h - what kind of input a file is, decided once, in one order, for the commands
 * that take whatever the user has (doctor, report).
 *
 * The decision is made from the bytes, never the name, in this order:
 *   1. a pickle (protocol 2+ opens with PROTO, 0x80): a memory snapshot;
 *   2. a profiler record, as od_profile_detect reads the first OD_FILE_HEAD_BYTES;
 *   3. a model's config.json (a JSON object with model_type or architectures, and a
 *      hidden size: hidden_size, n_embd or d_model);
 *   4. a per-step log or NVML series: text od_series_parse accepts whole;
 *   5. a log: text in which od_triage_parse finds anything (an OOM report,
 *      memory_summary(), memory_stats(), nvidia-smi output);
 *   6. nothing recognized.
 * Structure before free text: a step log that carries an OOM message in one of its
 * fields is a series, and a profiler record a profile, though triage would find the
 * message in either. Nothing is allocated that outlives the call. */
#ifndef OD_INPUTKIND_H
#define OD_INPUTKIND_H

#include <stddef.h>

#include "oomdoc/input.h"
#include "oomdoc/od.h"
#include "read/triage/triage.h"

typedef enum {
    OD_FILE_NOTHING,        /* nothing recognized */
    OD_FILE_SNAPSHOT,       /* torch.cuda.memory._dump_snapshot() pickle */
    OD_FILE_SNAPSHOT_GZIP,  /* the same, gzip-compressed */
    OD_FILE_CONFIG,         /* a model's config.json */
    OD_FILE_TORCH_TRACE,    /* profiler records (profile.h), in od_profile_kind's order */
    OD_FILE_TORCH_TIMELINE,
    OD_FILE_TORCH_TABLE,
    OD_FILE_JAX_PPROF,
    OD_FILE_JAX_STATS,
    OD_FILE_BFC_LOG,        /* XLA/TF BFC allocator lines: a log (its OOM line) whose
                               figures also read as a profile */
    OD_FILE_SERIES,         /* a per-step log (CSV / JSON Lines) or an NVML series */
    OD_FILE_LOG,            /* OOM reports, memory_summary, memory_stats, nvidia-smi */
    OD_FILE_UNDECIDED       /* only with OD_DETECT_HEAD: the whole text is needed */
} od_file_kind;

/* How many first bytes decide the kinds that a head can tell (1 and 2 above). */
#define OD_FILE_HEAD_BYTES 4096

/* An input whose first bytes were read ahead to tell its kind: head[0..head_len), then
 * pending[0..pending_len) (the rest of the chunk the head was cut from, lent by the input),
 * then the rest of the input. */
typedef struct {
    od_input *in;
    unsigned char head[OD_FILE_HEAD_BYTES];
    size_t head_len;
    const unsigned char *pending;
    size_t pending_len;
} od_headed;

/* Read in's first OD_FILE_HEAD_BYTES (fewer at its end) into h; in stays the caller's.
 * Returns the input's error, OD_OK otherwise. */
od_status od_headed_take(od_input *in, od_headed *h, od_error *err);
/* Hand the whole stream, head first, to fn(ctx, data, n) chunk by chunk until its end or
 * until fn returns nonzero. Returns the stream's error, OD_OK otherwise. */
typedef int (*od_chunk_fn)(void *ctx, const void *data, size_t n);
od_status od_headed_each(od_headed *h, od_chunk_fn fn, void *ctx, od_error *err);

/* Flags of od_file_kind_detect. */
enum {
    OD_DETECT_HEAD = 1, /* bytes are the first bytes only: kinds 3 to 6 are OD_FILE_UNDECIDED */
    OD_DETECT_GZIP = 2  /* bytes were gunzipped: a pickle is OD_FILE_SNAPSHOT_GZIP */
};

/* Decide the kind of an input whose (gunzipped) bytes are bytes[0..len), need not be
 * NUL-terminated, and store it in *out. Deciding 4 and 5 parses the text (and frees what
 * it parsed). Fails only with OD_ERR_NOMEM (*out then unchanged). */
od_status od_file_kind_detect(const void *bytes, size_t len, unsigned flags, od_file_kind *out, od_error *err);

/* Decide kinds 3 to 6 from what reading the whole text found, in the order above: a
 * config when text (the whole text, or NULL when it was too long to keep) is one; else a
 * series when series_status (od_series_parse's or od_series_finish's) is OD_OK; else a log
 * when t (NULL: none) holds anything; else nothing. od_file_kind_detect decides so too; this
 * is for the readers that stream the text into both parsers at once. */
od_file_kind od_file_kind_settle(const char *text, size_t len, od_status series_status, const od_triage *t);

/* Whether k is a memory snapshot, plain or gzipped. */
int od_file_kind_snapshot(od_file_kind k);

/* The od_profile_kind a profiler-record kind reads as (OD_FILE_BFC_LOG included); -1 for
 * every other kind. */
int od_file_kind_profile(od_file_kind k);

#endif
