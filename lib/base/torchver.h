/* torchver.h - which PyTorch release first has each allocator setting and memory API, and
 * which releases a piece of evidence (an OOM message's wording, a snapshot's keys) allows,
 * so that advice never tells a user to do something their torch lacks.
 *
 * Plain values and pure functions: nothing is allocated and nothing needs freeing. Every
 * string these functions return is static (never freed, valid for the program's life).
 * The table describes CUDA builds; ROCm builds gained some allocator settings later. */
#ifndef OD_TORCHVER_H
#define OD_TORCHVER_H

#include <stddef.h>

#include "oomdoc/od.h"

/* A PyTorch release. All zero means "unknown". nightly is 1 for a development build
 * ("2.5.0a0+git...", "2.5.0.dev20240801"), which may predate some features of its own
 * series; release candidates ("2.1.0rc1") count as the release. */
typedef struct {
    unsigned major, minor, patch;
    unsigned nightly;
} od_torch_version;

/* The settings and APIs advice may name. od_torch_feature_name gives each one's text. */
typedef enum {
    OD_TORCH_ALLOC_CONF,                  /* the PYTORCH_CUDA_ALLOC_CONF variable itself */
    OD_TORCH_MAX_SPLIT_SIZE_MB,
    OD_TORCH_ROUNDUP_POWER2_DIVISIONS,    /* roundup_power2_divisions:N */
    OD_TORCH_ROUNDUP_POWER2_LIST,         /* roundup_power2_divisions:[256:1,...,>:8] */
    OD_TORCH_GARBAGE_COLLECTION_THRESHOLD,
    OD_TORCH_EXPANDABLE_SEGMENTS,
    OD_TORCH_BACKEND_CUDA_MALLOC_ASYNC,
    OD_TORCH_PINNED_USE_CUDA_HOST_REGISTER,
    OD_TORCH_SET_PER_PROCESS_MEMORY_FRACTION,
    OD_TORCH_MEMORY_SUMMARY,
    OD_TORCH_MEMORY_STATS,
    OD_TORCH_EMPTY_CACHE,
    OD_TORCH_MAX_MEMORY_ALLOCATED,
    OD_TORCH_RESET_PEAK_MEMORY_STATS,
    OD_TORCH_RECORD_MEMORY_HISTORY,       /* the old form: _record_memory_history(True) */
    OD_TORCH_RECORD_MEMORY_HISTORY_TRACE, /* old form with trace_alloc_max_entries=N */
    OD_TORCH_RECORD_MEMORY_HISTORY_ALL,   /* the new form: enabled="all", max_entries=N */
    OD_TORCH_DUMP_SNAPSHOT,
    OD_TORCH_MEMPOOL,
    OD_TORCH_CHECKPOINT_USE_REENTRANT,
    OD_TORCH_ADAMW_FUSED,
    OD_TORCH_CUDA_GRAPH,
    OD_TORCH_GRAPH_POOL_HANDLE,
    OD_TORCH_COMPILE,
    OD_TORCH_N_FEATURES
} od_torch_feature;

/* The releases a piece of evidence allows, as release series (bounds have patch 0):
 * every x.y.z with lower <= x.y <= upper. lower all zero: no lower bound is known;
 * upper all zero: no upper bound. why says what decided; refined is NULL, or says what
 * narrowed the range further (or why the exception's name was set aside). Both are
 * static sentences. */
typedef struct {
    od_torch_version lower;
    od_torch_version upper;
    const char *why;
    const char *refined;
} od_torch_range;

/* Parse a version as torch.__version__ prints it: "2.1.0", "2.1", "1.13.1+cu117",
 * "2.5.0a0+git1b2c3d4", "2.5.0.dev20240801+cu121", "2.1.0rc1" (a leading 'v' and
 * surrounding whitespace are allowed).
 * Returns OD_OK, or OD_ERR_ARG for NULL or anything else; on failure *out is set to the
 * unknown version. */
od_status od_torch_version_parse(const char *s, od_torch_version *out);

/* 1 when v is a known version (not all zero), 0 otherwise. */
int od_torch_version_known(od_torch_version v);

/* Order of a and b by (major, minor, patch); a nightly sorts just before the release of
 * the same numbers. Returns <0, 0 or >0. */
int od_torch_version_cmp(od_torch_version a, od_torch_version b);

/* Write v as "2.1.0" ("2.5.0 (dev build)" for a nightly, "unknown") into buf of size
 * bytes (truncated to fit, always terminated when size > 0). Returns buf. */
char *od_torch_version_format(od_torch_version v, char *buf, size_t size);

/* A range as people read it into buf[0..size), by release series ("2.1", not "2.1.0",
 * unless a bound is a patch release or a dev build): "2.1" for one series, "1.10 to 1.12",
 * "2.4 or newer", "1.13 or older", "any". Returns buf. */
char *od_torch_range_format(const od_torch_range *r, char *buf, size_t size);

/* The first release that has f (patch 0); the unknown version for a value outside the
 * enum. */
od_torch_version od_torch_since(od_torch_feature f);

/* Does release v have f? 1 yes, 0 no, -1 when v is unknown, or v is a nightly of the very
 * series f appeared in (it may predate it), or f is outside the enum. */
int od_torch_has(od_torch_version v, od_torch_feature f);

/* Does every release r allows have f? 1 when f appeared by r->lower, 0 when it appeared
 * after r->upper (no allowed release has it), -1 otherwise (no lower bound, or f appeared
 * inside the range). r may be NULL (-1). */
int od_torch_range_has(const od_torch_range *r, od_torch_feature f);

/* The setting or API as a user writes it ("expandable_segments",
 * "torch.cuda.memory._record_memory_history(enabled=\"all\", max_entries=N)"); NULL for a
 * value outside the enum. */
const char *od_torch_feature_name(od_torch_feature f);

/* The newest feature that texts[0..n) name (by the setting's or API's own text, e.g.
 * "expandable_segments", "torch.compile"; NULL texts are skipped) which a release that r
 * allows may lack. *lacks is 1 when no release r allows has it, 0 when some may (r
 * straddles its first release, or r is NULL: the version is unknown). Returns the
 * feature, or -1 when the texts name none that may be missing. */
int od_torch_missing_feature(const od_torch_range *r, const char *const *texts, size_t n, int *lacks);

/* Does the out-of-memory message joined in [p, e) (a logger's wrapped lines rejoined with
 * a space) end there, given that the line after it starts at next (end: the text's end)?
 * The one rule for where a message ends, for the triage and for dating it: the last
 * phrase of each wording (the ALLOC_CONF or Memory Management hint, MPS's "system
 * failure", the figures of the 1.0-2.1 wordings and a hint after them, which may begin on
 * the next line). */
int od_torch_message_complete(const char *p, const char *e, const char *next, const char *end);

/* Does the text at p (up to end) read phrase, a logger's word-wrap having perhaps put a
 * line break in place of one of its spaces? The break may have spaces, tabs and other
 * control bytes (a CR) before it and spaces or tabs after it. Wrapping at a word boundary
 * breaks "CUDA out of memory" as readily as any other four words; the one rule for
 * finding a broken phrase, for the triage and for dating a message. */
int od_torch_phrase_at(const char *p, const char *end, const char *phrase);

/* Does the text at p (up to end) begin a PyTorch CUDA/HIP out-of-memory message whose wording
 * od_torch_infer_message reads ("CUDA out of memory", "HIP out of memory", cudaMallocAsync's,
 * the THC allocator's of releases before 1.0), perhaps broken by a word-wrap? */
int od_torch_message_starts(const char *p, const char *end);

/* The most lines a message is read from (by od_torch_infer_message and the triage): its
 * first and the lines a logger wrapped it into. A 2.4+ message naming three other
 * processes is about 700 characters: 20 lines at 40 columns. */
#define OD_TORCH_MESSAGE_LINES 20

/* Infer the releases that print the first PyTorch CUDA/HIP out-of-memory message in
 * text[0..len) (need not be NUL-terminated; lines a logger wrapped are read as one, up to
 * OD_TORCH_MESSAGE_LINES from the message's first).
 * Fills *out and returns 1 when the message is in a wording the table knows; returns 0
 * and sets *out to the unknown range (why names the reason) otherwise. */
int od_torch_infer_message(const char *text, size_t len, od_torch_range *out);

/* Which keys a memory snapshot (torch.cuda.memory._snapshot / _dump_snapshot) carries;
 * each field is 1 when seen anywhere in the file, 0 when not. */
typedef struct {
    int block_history;        /* blocks carry "history" lists with frames (1.13 layout) */
    int dict_layout;          /* the top level is a dict with "segments" */
    int device_traces;        /* top-level "device_traces" */
    int segment_pool_id;      /* segments carry "segment_pool_id" */
    int is_expandable;        /* segments carry "is_expandable" */
    int allocator_settings;   /* top-level "allocator_settings" */
    int external_annotations; /* top-level "external_annotations" */
    int compile_context;      /* device_traces entries carry "compile_context" */
    int user_metadata;        /* device_traces entries carry "user_metadata" */
} od_torch_snapshot_keys;

/* The earliest release whose snapshots carry every key set in *k (a lower bound: absent
 * keys prove nothing). Unknown when k is NULL or no key is set. *why (may be NULL) gets a
 * static sentence naming the key that decided. */
od_torch_version od_torch_snapshot_since(const od_torch_snapshot_keys *k, const char **why);

#endif
