/* scan.h - the triage's scanner as its files share it (internal to read/triage/): the rules
 * of rules.def and the words of contexts.def as enums, the phrase index that finds them in a
 * line (index.c), and the scan's state that the figures functions fill (engine.c). */
#ifndef OD_TRIAGE_SCAN_H
#define OD_TRIAGE_SCAN_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "read/triage/text.h"
#include "read/triage/triage.h"

/* rules.def's framework resolvers (beyond od_framework's values) and fold modes. */
enum { OD_BY_TORCH = 100, OD_BY_CUDA_ERROR, OD_BY_XLA, OD_BY_BFC, OD_BY_RUNTIME };
enum {
    OD_FOLD_REPEAT, OD_FOLD_BACKOFF, OD_FOLD_OPENS, OD_FOLD_EXCEPTION, OD_FOLD_ATTACH, OD_FOLD_DEVICE,
    OD_FOLD_IGNORE
};
/* contexts.def's kinds of word. */
enum {
    OD_CTX_JAX, OD_CTX_XLA_TORCH, OD_CTX_TF, OD_CTX_ONNX, OD_CTX_TORCH, OD_CTX_PYTHON, OD_CTX_LUA, OD_CTX_ENGINE,
    OD_CTX_RUNTIME, OD_CTX_DEVICE, OD_CTX_KINDS
};

typedef enum {
#define RULE(id, ...) OD_RULE_##id,
#define READER(id, any)
#define LABEL(...)
#include "read/triage/rules.def"
#undef RULE
#undef READER
#undef LABEL
    OD_N_RULES
} od_rule_id;

typedef enum {
#define RULE(...)
#define READER(id, any) OD_READER_##id,
#define LABEL(...)
#include "read/triage/rules.def"
#undef RULE
#undef READER
#undef LABEL
    OD_N_READERS
} od_reader_id;

enum {
    OD_N_CONTEXTS = 0
#define CONTEXT(phrase, what, runtime) +1
#include "read/triage/contexts.def"
#undef CONTEXT
};

/* A set of rules or context rows. */
#define OD_SET_WORDS 2
typedef struct {
    uint64_t w[OD_SET_WORDS];
} od_tr_set;
#define OD_SET_HAS(s, i) (((s).w[(i) >> 6] >> ((i) & 63)) & 1)
#define OD_SET_ADD(s, i) ((s).w[(i) >> 6] |= 1ULL << ((i) & 63))

/* One rules.def row as the engine reads it. */
typedef struct tr_scan tr_scan;
typedef struct {
    const char *line, *le; /* the line (folded lines included), without its '\n' */
    const char *end;       /* the text's end: what follows the line (a message wrapped) */
    const char *at, *at_end; /* where the row's phrase is on the line */
    uint64_t lineno;
} od_tr_line;
/* A figures function: read the line l into r (framework, kind and library already set; it
 * may change them). Returns 1 (a report), 0 (the row does not apply: try the next) or -1 (the
 * line is no report at all). For OD_FOLD_ATTACH rows r is the open event's report. */
typedef int (*od_tr_figures_fn)(tr_scan *s, od_oom_report *r, const od_tr_line *l);

typedef struct {
    const char *name;
    int framework;       /* od_framework or OD_BY_* */
    od_oom_kind kind;
    const char *library; /* NULL: none */
    int fold;
    const char *any, *all, *not_;
    od_tr_figures_fn figures;
    const char *example;
} od_tr_rule;
extern const od_tr_rule od_tr_rules[OD_N_RULES];

typedef struct {
    const char *phrase;
    int what;            /* OD_CTX_* */
    const char *runtime; /* NULL: none */
} od_tr_context;
extern const od_tr_context od_tr_contexts[OD_N_CONTEXTS];

extern const char *const od_tr_readers[OD_N_READERS];

/* ---- the phrase index (index.c) ----
 * Every phrase of the rules, the contexts and the readers, found in a line in one pass: each
 * phrase is keyed by three of its letters (blanks left out, case folded), and a line's
 * letters are looked up three at a time in a bit table, so a line with none of the keys costs
 * a table probe a byte. */
typedef struct od_tr_index od_tr_index;
/* Returns a new index (free with od_tr_index_free), or NULL when out of memory. */
od_tr_index *od_tr_index_new(void);
void od_tr_index_free(od_tr_index *ix);
/* Stop looking for the words of context row c (the caller knows the input has them). */
void od_tr_index_retire_context(od_tr_index *ix, size_t c);

/* What a line holds. */
typedef struct {
    od_tr_set touched;           /* rules with a phrase found */
    const char *any_at[OD_N_RULES], *any_end[OD_N_RULES]; /* the first `any` phrase (if touched) */
    uint8_t any_slot[OD_N_RULES];                         /* ... which of the row's it is */
    uint8_t all_found[OD_N_RULES];                        /* bit k: the k-th `all` phrase */
    uint8_t not_found[OD_N_RULES];
    od_tr_set contexts;          /* context rows named */
    unsigned readers;            /* bit r: reader r's phrase */
    int cut_front, cut_back;     /* a phrase's key was seen but the phrase ran off the line's
                                    beginning (end): it may go on across the break */
} od_tr_hits;
/* Find every phrase in [p, hi), a line that begins at lo (lo <= p; hi is its end). */
void od_tr_hits_of(const od_tr_index *ix, const char *lo, const char *p, const char *hi, od_tr_hits *h);
/* Does rule k read the line h was made from? */
int od_tr_rule_reads(const od_tr_hits *h, size_t k);
/* Does any rule's `any` phrase (any reader's) cross position at of [p, hi)? */
int od_tr_crosses(const od_tr_index *ix, const char *p, const char *hi, size_t at);
/* Could a phrase run across a line break between text ending ...a1 a2 and text beginning
 * b1 b2 ... (the last two non-blank bytes of one line, the first two of the next; 0 when
 * missing)? A quick test before od_tr_crosses. */
int od_tr_may_cross(const od_tr_index *ix, const unsigned char a[2], const unsigned char b[2]);

/* ---- the scan (engine.c) ---- */
struct od_tr_fold_codes {
    uint16_t code[8]; /* rule * 64 + which of its `any` phrases: the wordings a report was read from */
    unsigned n;
};
struct tr_scan {
    const char *buf;
    size_t len;
    od_triage *t;
    size_t cap_reports, cap_summaries, cap_gpus, cap_procs;
    int nomem;
    od_tr_index *ix;
    od_tr_set input_ctx;     /* context rows the whole input names */
    od_tr_set line_ctx;      /* ... and the line being read */
    unsigned ctx_kinds;      /* bit OD_CTX_*: the input names one of that kind */
    const char *input_runtime, *input_engine, *input_lua; /* the first such row's name, or NULL */
    /* per report (same index): the line it last grew on, the wordings it was read from */
    struct od_tr_fold {
        uint64_t last_line;
        struct od_tr_fold_codes codes;
    } *fold;
    size_t cap_fold;
    int has_open;            /* a TF/XLA event still collecting lines: report open_idx */
    size_t open_idx;
    int open_has_exc;
    /* a device's figures logged at start-up (OD_FOLD_DEVICE) */
    uint64_t device_total, device_free;
    int have_device_total, have_device_free;
};

/* Does the line (or, when line is 0, the input) name a word of kind what? */
int od_tr_names(const tr_scan *s, int what, int line);
/* The runtime the line names (kinds OD_CTX_RUNTIME, _ENGINE, _LUA as asked), else NULL; the
 * first row of that kind the input names, else NULL. */
const char *od_tr_line_runtime(const tr_scan *s, int what);
const char *od_tr_runtime(const tr_scan *s, int what);
/* Is a per-process cap set below the device (classify.c)? What this job holds: its process
 * figure where printed (pool plus context and libraries), else its pool. */
int od_tr_capped(const od_oom_report *r);
uint64_t od_tr_job_bytes(const od_oom_report *r);
/* Set a figure unless the report has it (the first figure wins: later text may echo). */
void od_tr_set_figure(od_oom_report *r, unsigned bit, uint64_t *field, const od_tr_size *t);
void od_tr_set_library(od_oom_report *r, const char *lib);
void od_tr_add_other(tr_scan *s, od_oom_report *r, uint64_t pid, uint64_t bytes);

/* ---- lines a logger wrapped (wrap.c) ---- */
#define OD_TR_CROSS_SIDE 128 /* bytes of each line a phrase across a break is looked for in */
#define OD_WRAP_LINE '\x01' /* a line unwrap() moved up: its break */
#define OD_WRAP_NONE '\x02' /* ... its indentation */
#define OD_WRAP_SOFT '\x03' /* a break read as a space: a phrase ran across it */
#define OD_WRAP_GLUE '\x04' /* a break read as nothing: a phrase's word ran across it */
int od_tr_is_wrap_mark(char c);
/* Rejoin the lines of buf[0..len) a logger or terminal wrapped (in place, every offset kept). */
void od_tr_unwrap(const od_tr_index *ix, char *buf, size_t len);
/* Join a PyTorch message whose anchor a is on [.., le) with the lines a logger wrapped it into
 * (indentation collapsed) in buf; returns the joined text's end, or NULL when the line is whole. */
const char *od_tr_join_message(const char *a, const char *le, const char *end, char *buf, size_t size);
/* Date the PyTorch message at a (its line begins at line) by its wording. */
void od_tr_date_message(od_oom_report *r, const char *a, const char *line, const char *end);
/* NULs, CRs and the scanner's own marker bytes read as spaces. */
void od_tr_normalize(char *buf, size_t len);

/* ---- tables (tables.c) and memory_stats (stats.c) ---- */
/* Each reads from its header line on; returns where the scan goes on (NULL: out of memory). */
const char *od_tr_scan_summary(tr_scan *s, const char *line, const char *end, uint64_t *lineno);
const char *od_tr_scan_smi_query(tr_scan *s, const char *line, const char *le, const char *end, uint64_t *lineno);
const char *od_tr_scan_smi_csv(tr_scan *s, const char *line, const char *le, const char *end, uint64_t *lineno);
int od_tr_scan_smi_table(tr_scan *s, const char *prev, const char *prev_end, const char *line, const char *le);
void od_tr_scan_smi_proc(tr_scan *s, const char *line, const char *le);
/* After the scan: the tables' verdicts, and each driver report's nvidia-smi evidence. */
void od_tr_tables_verdicts(od_triage *t);

/* A memory_stats() dict printed by Python, read a line at a time (stats.c). */
#define OD_REPR_KEY_MAX 96
#define OD_REPR_PREFIX_MAX 64
typedef struct {
    int expect;
    int list, wrapped;
    json_t *obj;            /* the entries stats_from reads, so far; NULL: none yet */
    size_t entries;
    char key[OD_REPR_KEY_MAX];
    int key_ok, want;
    json_t *value;          /* the entry's value, until what closes the entry */
    char prefix[OD_REPR_PREFIX_MAX];
    size_t prefix_len;
    int found;
    od_mem_stats m;
    int nomem;
} od_repr_reader;
void od_repr_line(od_repr_reader *r, const char *line, size_t n);
void od_repr_end(od_repr_reader *r);
void od_repr_drop(od_repr_reader *r);
int od_repr_active(const od_repr_reader *r);
/* The input's memory_stats into s->t->stats: text (the whole input, NULL: none) when it is one
 * JSON dump, else py (the last dict Python printed; NULL: none); its verdict with it. */
void od_tr_scan_stats(tr_scan *s, const char *text, size_t len, const od_mem_stats *py);

/* What the whole input names, as the stream gathers it for the scan of its kept lines. */
typedef struct {
    od_tr_set contexts;
} od_tr_input;
/* Scan buf[0..len) (normalized, NUL-terminated; unwrap rewrites it in place). */
od_status od_tr_scan_text(char *buf, size_t len, const od_tr_input *in, const char *stats_text, size_t stats_len,
                          const od_mem_stats *py_stats, od_triage **out, od_error *err);

#endif
