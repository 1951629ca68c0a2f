/* engine.c - the scan: each line read by the first rules.def row that matches it, the
 * framework decided by the words of the input (contexts.def), the lines of one event folded
 * into one report by one rule, and the reports classified. The scanner works on a private
 * NUL-terminated copy of the input, so no search can run past the end. */
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "read/triage/scan.h"

#define FOLD_LINES 3 /* a follow-up line of one event comes within this many lines */
#define MAX_WORDINGS 8

/* ---------- what the input names ---------- */

static int set_names(const od_tr_set *set, int what)
{
    for (size_t c = 0; c < OD_N_CONTEXTS; c++)
        if (OD_SET_HAS(*set, c) && od_tr_contexts[c].what == what)
            return 1;
    return 0;
}

int od_tr_names(const tr_scan *s, int what, int line)
{
    return set_names(line ? &s->line_ctx : &s->input_ctx, what);
}

/* The first row of kind what that set names, or NULL. */
static const char *set_runtime(const od_tr_set *set, int what)
{
    for (size_t c = 0; c < OD_N_CONTEXTS; c++)
        if (OD_SET_HAS(*set, c) && od_tr_contexts[c].what == what)
            return od_tr_contexts[c].runtime;
    return NULL;
}

/* The first row of kind what (table order: an application before the libraries under it) that
 * the line names; where the line names one, a row the input names ahead of it wins. */
const char *od_tr_line_runtime(const tr_scan *s, int what)
{
    for (size_t c = 0; c < OD_N_CONTEXTS; c++)
        if (od_tr_contexts[c].what == what && OD_SET_HAS(s->input_ctx, c) && !OD_SET_HAS(s->line_ctx, c)) {
            for (size_t d = c + 1; d < OD_N_CONTEXTS; d++)
                if (OD_SET_HAS(s->line_ctx, d) && od_tr_contexts[d].what == what)
                    return od_tr_contexts[c].runtime;
            return NULL;
        } else if (OD_SET_HAS(s->line_ctx, c) && od_tr_contexts[c].what == what) {
            return od_tr_contexts[c].runtime;
        }
    return NULL;
}

const char *od_tr_runtime(const tr_scan *s, int what)
{
    return set_runtime(&s->input_ctx, what);
}

/* ---------- reports ---------- */

void od_tr_set_figure(od_oom_report *r, unsigned bit, uint64_t *field, const od_tr_size *t)
{
    if (r->have & bit)
        return; /* the first figure wins: later text may be an unrelated echo */
    r->have |= bit;
    *field = t->bytes;
    if (t->rounded)
        r->rounded = 1;
}

void od_tr_set_library(od_oom_report *r, const char *lib)
{
    size_t n = lib ? strlen(lib) : 0;
    if (n > sizeof r->library - 1)
        n = sizeof r->library - 1;
    memcpy(r->library, lib ? lib : "", n);
    r->library[n] = '\0';
}

void od_tr_add_other(tr_scan *s, od_oom_report *r, uint64_t pid, uint64_t bytes)
{
    od_oom_process *np = realloc(r->other, (r->n_other + 1) * sizeof *np);
    if (!np) {
        s->nomem = 1;
        return;
    }
    r->other = np;
    r->other[r->n_other].pid = pid;
    r->other[r->n_other].bytes = bytes;
    r->n_other++;
}

/* Append c (its process list moves with it) as a new report read from wording code. */
static od_oom_report *add_report(tr_scan *s, od_oom_report *c, unsigned code, uint64_t lineno)
{
    if (!od_grow((void **)&s->t->reports, &s->cap_reports, s->t->n_reports + 1, sizeof *s->t->reports) ||
        !od_grow((void **)&s->fold, &s->cap_fold, s->t->n_reports + 1, sizeof *s->fold)) {
        free(c->other);
        s->nomem = 1;
        return NULL;
    }
    size_t i = s->t->n_reports++;
    s->t->reports[i] = *c;
    memset(&s->fold[i], 0, sizeof s->fold[i]);
    s->fold[i].last_line = lineno;
    s->fold[i].codes.code[0] = (uint16_t)code;
    s->fold[i].codes.n = 1;
    return &s->t->reports[i];
}

static void close_open(tr_scan *s)
{
    s->has_open = 0;
    s->open_has_exc = 0;
}

static od_oom_report *open_report(tr_scan *s)
{
    return s->has_open ? &s->t->reports[s->open_idx] : NULL;
}

/* ---------- the framework ---------- */

/* The framework of a row's report, by its resolver (rules.def). */
static void resolve(tr_scan *s, const od_tr_rule *row, od_oom_report *r)
{
    const char *rt;
    r->framework = OD_FW_PYTORCH_CUDA;
    r->kind = row->kind;
    od_tr_set_library(r, row->library);
    switch (row->framework) {
    case OD_BY_TORCH:
        if ((rt = set_runtime(&s->input_ctx, OD_CTX_LUA))) {
            r->framework = OD_FW_OTHER; /* Lua Torch's THC prints PyTorch 0.x's words */
            od_tr_set_library(r, rt);
        } else if ((rt = od_tr_line_runtime(s, OD_CTX_RUNTIME)) ||
                   (!od_tr_names(s, OD_CTX_TORCH, 0) && (rt = set_runtime(&s->input_ctx, OD_CTX_RUNTIME)))) {
            r->framework = OD_FW_OTHER; /* another runtime's CUDA error in PyTorch's words */
            od_tr_set_library(r, rt);
        }
        return;
    case OD_BY_CUDA_ERROR:
        if (od_tr_names(s, OD_CTX_XLA_TORCH, 0) || od_tr_names(s, OD_CTX_XLA_TORCH, 1))
            r->framework = OD_FW_PYTORCH_XLA;
        else if (od_tr_names(s, OD_CTX_JAX, 0) || od_tr_names(s, OD_CTX_JAX, 1))
            r->framework = OD_FW_JAX;
        else if (od_tr_names(s, OD_CTX_TF, 0))
            r->framework = OD_FW_TENSORFLOW;
        else if ((rt = od_tr_line_runtime(s, OD_CTX_RUNTIME)) ||
                 (!od_tr_names(s, OD_CTX_TORCH, 0) && (rt = set_runtime(&s->input_ctx, OD_CTX_RUNTIME)))) {
            r->framework = OD_FW_OTHER;
            od_tr_set_library(r, rt);
        } else if (!od_tr_names(s, OD_CTX_TORCH, 0) && !od_tr_names(s, OD_CTX_PYTHON, 0)) {
            r->framework = OD_FW_OTHER; /* a CUDA program of its own, not Python */
        }
        return;
    case OD_BY_XLA:
        if (od_tr_names(s, OD_CTX_XLA_TORCH, 0) || od_tr_names(s, OD_CTX_XLA_TORCH, 1)) {
            r->framework = OD_FW_PYTORCH_XLA;
        } else if ((rt = od_tr_line_runtime(s, OD_CTX_RUNTIME)) || (rt = set_runtime(&s->input_ctx, OD_CTX_RUNTIME))) {
            r->framework = OD_FW_OTHER; /* another compiler front end over XLA (Reactant) */
            od_tr_set_library(r, rt);
        } else if (od_tr_names(s, OD_CTX_JAX, 0) || od_tr_names(s, OD_CTX_JAX, 1)) {
            r->framework = OD_FW_JAX;
        } else {
            r->framework = OD_FW_TENSORFLOW;
        }
        return;
    case OD_BY_BFC:
        r->framework = od_tr_names(s, OD_CTX_XLA_TORCH, 0) ? OD_FW_PYTORCH_XLA
                       : od_tr_names(s, OD_CTX_JAX, 0)     ? OD_FW_JAX
                                                           : OD_FW_TENSORFLOW;
        return;
    case OD_BY_RUNTIME:
        r->framework = OD_FW_OTHER;
        if ((rt = od_tr_line_runtime(s, OD_CTX_RUNTIME)) || (rt = od_tr_line_runtime(s, OD_CTX_LUA)) ||
            (row->kind == OD_KIND_GENERIC && (rt = od_tr_line_runtime(s, OD_CTX_ENGINE))) ||
            (rt = set_runtime(&s->input_ctx, OD_CTX_RUNTIME)) || (rt = set_runtime(&s->input_ctx, OD_CTX_LUA)) ||
            (row->kind == OD_KIND_GENERIC && !od_tr_names(s, OD_CTX_TORCH, 0) &&
             (rt = set_runtime(&s->input_ctx, OD_CTX_ENGINE)))) {
            od_tr_set_library(r, rt);
            return;
        }
        if (row->library)
            return;
        if (od_tr_names(s, OD_CTX_ONNX, 0) || od_tr_names(s, OD_CTX_ONNX, 1))
            r->framework = OD_FW_ONNXRUNTIME;
        else if (row->kind != OD_KIND_GENERIC)
            return;
        else if (od_tr_names(s, OD_CTX_XLA_TORCH, 0))
            r->framework = OD_FW_PYTORCH_XLA;
        else if (od_tr_names(s, OD_CTX_JAX, 0))
            r->framework = OD_FW_JAX;
        else if (od_tr_names(s, OD_CTX_TF, 0))
            r->framework = OD_FW_TENSORFLOW;
        else if (od_tr_names(s, OD_CTX_TORCH, 0))
            r->framework = OD_FW_PYTORCH_CUDA;
        return;
    default:
        r->framework = (od_framework)row->framework;
        return;
    }
}

/* ---------- mentions ---------- */

/* Is the phrase at a, on the line from line, a sentence about OOMs ("If you encounter CUDA out
 * of memory ...", "I keep getting a CUDA out of memory error", "memory at the OOM:") rather
 * than the error? No message of a runtime puts an article or such a verb before its words. */
static int prose(const char *line, const char *a)
{
    static const char *const before[] = {
        "encounter ", "encountered ", "avoid ", "avoiding ", "prevent ", "If you get ", "to fix ", "getting a ",
        "getting an ", "got a ", "got an ", "get a ", "get an ", "causes a ", "cause a ", "solve the ",
        "about the ", "fix the ", "fix this ", "avoid the ", "the ", "a ", "an ", "to avoid ", "prevents ", "when ", "died with ", "dies with ", "run into ", "ran into ", "hit ",
        "hitting ", "cause of ", "get ", "getting ", "got ",
    };
    for (size_t i = 0; i < sizeof before / sizeof before[0]; i++)
        if (od_tr_ends(line, a, before[i]))
            return 1;
    return 0;
}

/* Is the phrase at a inside a quotation that opens before it on its line: a traceback's
 * source line (`raise ValueError("No available memory ...`), a line announcing the error it
 * throws next ("About to throw exception 'cuDNN failure 2: ...'")? A mention: the message
 * itself wins over it. */
static int quoted(const char *line, const char *a)
{
    unsigned dq = 0, sq = 0;
    for (const char *p = line; p < a; p++) {
        dq += *p == '"';
        sq += *p == '\'';
    }
    return (dq & 1) || (sq & 1);
}

/* ---------- folding ---------- */

static int same_family(const od_oom_report *a, const od_oom_report *b)
{
    return a->framework == b->framework && a->kind == b->kind && !strcmp(a->library, b->library);
}

/* ... or b names no library: a line of a's event that does not say whose it is. */
static int same_event_family(const od_oom_report *a, const od_oom_report *b)
{
    return a->framework == b->framework && a->kind == b->kind && (!b->library[0] || !strcmp(a->library, b->library));
}

/* Do two figures agree, as two lines of one event restate a size (NCCL's segment of 5967876
 * bytes, then "(size 5967872)")? Within 1/64 of the larger. */
static int agree(uint64_t x, uint64_t y)
{
    uint64_t hi = x > y ? x : y, lo = x > y ? y : x;
    return hi - lo <= hi / 64;
}

/* Can a and b be one report: every figure both print agrees? */
static int compatible(const od_oom_report *a, const od_oom_report *b)
{
    unsigned both = a->have & b->have;
    if ((both & OD_HAVE_DEVICE) && a->device != b->device)
        return 0;
#define AGREE(bit, field) (!(both & (bit)) || agree(a->field, b->field))
    if (!(AGREE(OD_HAVE_REQUESTED, requested_bytes) && AGREE(OD_HAVE_CAPACITY, capacity_bytes) &&
          AGREE(OD_HAVE_FREE, free_bytes) && AGREE(OD_HAVE_ALLOWED, allowed_bytes) &&
          AGREE(OD_HAVE_ALLOCATED, allocated_bytes) && AGREE(OD_HAVE_RESERVED_UNALLOC, reserved_unallocated_bytes) &&
          AGREE(OD_HAVE_PROCESS, process_bytes)))
        return 0;
#undef AGREE
    return !(a->n_other && b->n_other) && !(a->program_bytes && b->program_bytes) &&
           !(a->max_model_len && b->max_model_len);
}

/* r takes the figures c adds (c's process list moves to r when r has none). */
static void merge(od_oom_report *r, od_oom_report *c)
{
#define TAKE(bit, field)             \
    if ((c->have & (bit)) && !(r->have & (bit))) { \
        r->field = c->field;         \
        r->have |= (bit);            \
    }
    TAKE(OD_HAVE_REQUESTED, requested_bytes)
    TAKE(OD_HAVE_CAPACITY, capacity_bytes)
    TAKE(OD_HAVE_FREE, free_bytes)
    TAKE(OD_HAVE_ALLOWED, allowed_bytes)
    TAKE(OD_HAVE_ALLOCATED, allocated_bytes)
    TAKE(OD_HAVE_RESERVED_UNALLOC, reserved_unallocated_bytes)
    TAKE(OD_HAVE_PROCESS, process_bytes)
    TAKE(OD_HAVE_DEVICE, device)
#undef TAKE
    r->rounded |= c->rounded;
    r->request_is_segment |= c->request_is_segment;
    if (!r->n_other && c->n_other) {
        r->other = c->other;
        r->n_other = c->n_other;
        c->other = NULL;
        c->n_other = 0;
    }
    if (!r->program_bytes)
        r->program_bytes = c->program_bytes;
    if (!r->fraction_permille)
        r->fraction_permille = c->fraction_permille;
    if (!r->cache_error_bytes)
        r->cache_error_bytes = c->cache_error_bytes;
    if (!r->log_pid)
        r->log_pid = c->log_pid;
    else if (c->log_pid && c->log_pid != r->log_pid)
        r->log_processes++;
    if (!r->max_model_len) {
        r->max_model_len = c->max_model_len;
        r->kv_cache_tokens = c->kv_cache_tokens;
    }
    if (!r->have_torch_range && c->have_torch_range) {
        r->have_torch_range = 1;
        r->torch_range = c->torch_range;
    }
    free(c->other);
    c->other = NULL;
}

static int has_code(const struct od_tr_fold_codes *f, unsigned code)
{
    for (unsigned i = 0; i < f->n; i++)
        if (f->code[i] == code)
            return 1;
    return 0;
}

/* TF/XLA's exception line c: joins the open event once (or to add the tensor's shape), else
 * opens its own. */
static void fold_exception(tr_scan *s, od_oom_report *c, unsigned code, uint64_t lineno)
{
    od_oom_report *r = open_report(s);
    if (!r || (s->open_has_exc && !(c->dtype[0] && !r->dtype[0]))) {
        if (!add_report(s, c, code, lineno))
            return;
        s->has_open = 1;
        s->open_idx = s->t->n_reports - 1;
        s->open_has_exc = 1;
        return;
    }
    if (c->dtype[0]) {
        memcpy(r->dtype, c->dtype, sizeof r->dtype);
        r->dtype_from_op = c->dtype_from_op;
        r->requested_bytes = c->requested_bytes; /* the tensor's own size beats the BFC's rounding */
        r->rounded = 0;
        r->have |= OD_HAVE_REQUESTED;
    } else if (!(r->have & OD_HAVE_REQUESTED) && (c->have & OD_HAVE_REQUESTED)) {
        r->requested_bytes = c->requested_bytes;
        r->rounded = c->rounded;
        r->have |= OD_HAVE_REQUESTED;
    }
    if (c->have & OD_HAVE_DEVICE) {
        r->device = c->device;
        r->have |= OD_HAVE_DEVICE;
    }
    if (od_tr_names(s, OD_CTX_JAX, 1) && !od_tr_names(s, OD_CTX_XLA_TORCH, 0))
        r->framework = OD_FW_JAX;
    s->open_has_exc = 1;
    free(c->other);
}

/* The one folding rule for a line's report c (rules.def's fold column). */
static void fold(tr_scan *s, const od_tr_rule *row, unsigned code, od_oom_report *c, uint64_t lineno)
{
    if (row->fold == OD_FOLD_OPENS) {
        close_open(s);
        if (add_report(s, c, code, lineno)) {
            s->has_open = 1;
            s->open_idx = s->t->n_reports - 1;
        }
        return;
    }
    if (row->fold == OD_FOLD_EXCEPTION) {
        fold_exception(s, c, code, lineno);
        return;
    }
    close_open(s);
    size_t n = s->t->n_reports;
    od_oom_report *r = n ? &s->t->reports[n - 1] : NULL;
    struct od_tr_fold *f = n ? &s->fold[n - 1] : NULL;
    if (r && lineno <= f->last_line + FOLD_LINES && same_event_family(r, c) && !c->mention && !r->mention) {
        if (has_code(&f->codes, code)) {
            /* the same wording again: a repeat, or TF backing off from its pool's size */
            if (row->fold == OD_FOLD_BACKOFF && c->kind != OD_KIND_HOST_RAM && (r->have & OD_HAVE_REQUESTED) &&
                (c->have & OD_HAVE_REQUESTED)) {
                uint64_t b = c->requested_bytes;
                if (c->log_pid && r->log_pid && c->log_pid != r->log_pid && c->log_pid != r->log_pid_last)
                    r->log_processes++;
                r->log_pid_last = c->log_pid;
                if (b == r->backoff_last_bytes)
                    r->occurrences++;
                else if (b < r->backoff_last_bytes && b >= r->backoff_last_bytes / 10 * 8)
                    r->backoff_steps++;
                r->backoff_last_bytes = b;
                f->last_line = lineno;
                free(c->other);
                return;
            }
        } else if (compatible(r, c)) {
            merge(r, c); /* another line of the same event */
            if (f->codes.n < MAX_WORDINGS)
                f->codes.code[f->codes.n++] = (uint16_t)code;
            f->last_line = lineno;
            return;
        }
    }
    add_report(s, c, code, lineno);
}

/* ---------- a line ---------- */

/* Read the line by the rules; returns 1 when one of them took it. */
static int read_rules(tr_scan *s, const od_tr_hits *h, const char *line, const char *le, const char *end,
                      uint64_t lineno)
{
    for (size_t k = 0; k < OD_N_RULES; k++) {
        if (!od_tr_rule_reads(h, k))
            continue;
        const od_tr_rule *row = &od_tr_rules[k];
        od_tr_line l = {line, le, end, h->any_at[k], h->any_end[k], lineno};
        if (prose(line, l.at))
            return 1; /* a sentence about an OOM: no row reads the line */
        if (row->fold == OD_FOLD_IGNORE)
            return 1;
        if (row->fold == OD_FOLD_ATTACH) {
            od_oom_report *r = open_report(s);
            if (r && row->figures(s, r, &l) > 0)
                return 1;
            continue;
        }
        od_oom_report c;
        memset(&c, 0, sizeof c);
        c.offset = (uint64_t)(line - s->buf);
        c.line = lineno;
        c.occurrences = 1;
        resolve(s, row, &c);
        int rc = row->figures(s, &c, &l);
        if (rc <= 0) {
            free(c.other);
            if (rc < 0)
                return 1;
            continue;
        }
        if (row->fold == OD_FOLD_DEVICE) {
            free(c.other);
            return 1;
        }
        c.mention |= quoted(line, l.at);
        fold(s, row, (unsigned)(k * 64 + h->any_slot[k]), &c, lineno);
        return 1;
    }
    return 0;
}

/* Each line that no rule took may be a table's (tables.c). Returns where the scan goes on, or
 * NULL when out of memory; *lineno and *in_procs as the tables advance them. */
static const char *read_tables(tr_scan *s, const od_tr_hits *h, const char *line, const char *le, const char *end,
                               const char *prev, const char *prev_end, uint64_t *lineno, int *in_procs, int *table)
{
    /* (each as the stream's index found its phrase, so that the stream keeps what is read) */
#define READS(id) (h->readers & (1u << OD_READER_##id))
    *table = 1;
    if (READS(MEMORY_SUMMARY) && od_tr_find_exact(line, le, "PyTorch CUDA memory summary, device ID "))
        return od_tr_scan_summary(s, line, end, lineno);
    if (READS(SMI_QUERY) && od_tr_find_exact(line, le, "FB Memory Usage"))
        return od_tr_scan_smi_query(s, line, le, end, lineno);
    if (READS(SMI_CSV) && od_tr_find_exact(line, le, "memory.total") && memchr(line, ',', (size_t)(le - line)))
        return od_tr_scan_smi_csv(s, line, le, end, lineno);
    *table = 0;
    if (READS(SMI_PROCESSES) && od_tr_find_exact(line, le, "Processes:"))
        *in_procs = 1;
    else if (*in_procs)
        od_tr_scan_smi_proc(s, line, le);
    else if (READS(SMI_TABLE))
        od_tr_scan_smi_table(s, prev, prev_end, line, le);
#undef READS
    return line;
}

/* ---------- the end of the scan ---------- */

static int same_report(const od_oom_report *a, const od_oom_report *b)
{
    if (!same_family(a, b) || a->have != b->have || a->n_other != b->n_other || a->max_model_len != b->max_model_len ||
        a->kv_cache_tokens != b->kv_cache_tokens)
        return 0;
    if (a->requested_bytes != b->requested_bytes || a->capacity_bytes != b->capacity_bytes ||
        a->free_bytes != b->free_bytes || a->allowed_bytes != b->allowed_bytes ||
        a->allocated_bytes != b->allocated_bytes || a->reserved_unallocated_bytes != b->reserved_unallocated_bytes ||
        a->process_bytes != b->process_bytes)
        return 0;
    for (size_t i = 0; i < a->n_other; i++)
        if (a->other[i].pid != b->other[i].pid || a->other[i].bytes != b->other[i].bytes)
            return 0;
    return 1;
}

/* Are a's figures some of b's, b having more? (a: a title or summary of b's message) */
static int fewer_figures(const od_oom_report *a, const od_oom_report *b)
{
    if (!same_family(a, b) || (a->have & ~b->have) || (a->n_other && a->n_other != b->n_other))
        return 0;
    if (a->have == b->have && a->n_other == b->n_other)
        return 0;
#define AGREE(bit, field) (!(a->have & (bit)) || a->field == b->field)
    return AGREE(OD_HAVE_REQUESTED, requested_bytes) && AGREE(OD_HAVE_CAPACITY, capacity_bytes) &&
           AGREE(OD_HAVE_FREE, free_bytes) && AGREE(OD_HAVE_ALLOWED, allowed_bytes) &&
           AGREE(OD_HAVE_ALLOCATED, allocated_bytes) && AGREE(OD_HAVE_RESERVED_UNALLOC, reserved_unallocated_bytes) &&
           AGREE(OD_HAVE_PROCESS, process_bytes) && AGREE(OD_HAVE_DEVICE, device);
#undef AGREE
}

static int no_figures(const od_oom_report *r)
{
    return (r->have & ~(unsigned)OD_HAVE_DEVICE) == 0 && r->n_other == 0;
}

/* A report that speaks of an OOM rather than being one: a mention or a generic line, without
 * figures. */
static int loose(const od_oom_report *r)
{
    return (r->mention || r->kind == OD_KIND_GENERIC) && no_figures(r);
}

/* The input's engine on a PyTorch report made inside it; a start-up device's figures on a
 * TensorFlow report without them. */
static void context_figures(const tr_scan *s, od_oom_report *r)
{
    const char *engine = set_runtime(&s->input_ctx, OD_CTX_ENGINE);
    if (engine && !r->library[0] &&
        (r->kind == OD_KIND_ALLOCATOR || r->kind == OD_KIND_DRIVER || r->kind == OD_KIND_GENERIC) &&
        od_framework_torch_like(r->framework))
        od_tr_set_library(r, engine);
    if (r->framework == OD_FW_TENSORFLOW && s->have_device_total) {
        r->startup_total_bytes = s->device_total;
        r->startup_free_bytes = s->have_device_free ? s->device_free : s->device_total;
        if (!(r->have & OD_HAVE_CAPACITY)) {
            r->capacity_bytes = s->device_total;
            r->have |= OD_HAVE_CAPACITY;
        }
        /* what was free when TF started is the free figure of a report that has only its request
         * (not of one with the pool's figures: it was not free at the failure) */
        if (s->have_device_free && !(r->have & (OD_HAVE_FREE | OD_HAVE_ALLOCATED))) {
            r->free_bytes = s->device_free;
            r->have |= OD_HAVE_FREE;
        }
    }
}

/* Classify every report and fold the ones in a row that are one: identical reports add up
 * their occurrences; one without figures (a title, a summary, a quoted source line) next to
 * one of the same framework and kind with figures gives way to it. */
static void finish_reports(tr_scan *s)
{
    od_triage *t = s->t;
    size_t w = 0;
    for (size_t i = 0; i < t->n_reports; i++) {
        od_oom_report *r = &t->reports[i];
        context_figures(s, r);
        od_triage_classify(r);
        od_oom_report *p = w ? &t->reports[w - 1] : NULL;
        if (p && same_report(p, r)) {
            if (p->mention && !r->mention) {
                free(p->other);
                *p = *r;
            } else {
                if (p->mention == r->mention)
                    p->occurrences += r->occurrences;
                free(r->other);
            }
            continue;
        }
        if (p && (fewer_figures(p, r) || (p->mention && same_family(p, r) && no_figures(p)))) {
            free(p->other);
            *p = *r; /* the full message wins over an earlier summary of it */
            continue;
        }
        /* a generic line or a mention without figures speaks of the report beside it, whatever
         * its wording */
        if (p && loose(p) && !loose(r)) {
            free(p->other);
            *p = *r;
            continue;
        }
        if (p && ((same_event_family(p, r) && no_figures(r) && !no_figures(p)) || (loose(r) && !loose(p)))) {
            free(r->other); /* ... and over a later one */
            continue;
        }
        t->reports[w++] = *r;
    }
    t->n_reports = w;
}

/* Count the folded lines in [line, le) and trim unwrap's trailing markers; returns the end. */
static const char *line_end(const char *line, const char *le, uint64_t *folded)
{
    *folded = 0;
    while (le > line && (le[-1] == OD_WRAP_LINE || le[-1] == OD_WRAP_NONE)) {
        *folded += le[-1] == OD_WRAP_LINE;
        le--;
    }
    for (const char *p = line; p < le; p++) {
        p = memchr(p, OD_WRAP_SOFT, (size_t)(le - p));
        if (!p)
            break;
        (*folded)++;
    }
    for (const char *p = line; p < le; p++) {
        p = memchr(p, OD_WRAP_GLUE, (size_t)(le - p));
        if (!p)
            break;
        (*folded)++;
    }
    return le;
}

od_status od_tr_scan_text(char *buf, size_t len, const od_tr_input *in, const char *stats_text, size_t stats_len,
                          const od_mem_stats *py_stats, od_triage **out, od_error *err)
{
    *out = NULL;
    tr_scan s;
    memset(&s, 0, sizeof s);
    s.buf = buf;
    s.len = len;
    s.t = calloc(1, sizeof *s.t);
    s.ix = od_tr_index_new();
    if (!s.t || !s.ix) {
        free(s.t);
        od_tr_index_free(s.ix);
        return od_fail(err, OD_ERR_NOMEM, "out of memory reading %zu bytes", len);
    }
    s.input_ctx = in->contexts;
    od_tr_scan_stats(&s, stats_text, stats_len, py_stats);
    od_tr_unwrap(s.ix, buf, len);

    const char *end = buf + len, *line = buf, *prev = NULL, *prev_end = NULL;
    uint64_t lineno = 1;
    int in_procs = 0;
    od_tr_hits *h = malloc(sizeof *h);
    if (!h)
        s.nomem = 1;
    while (line < end && !s.nomem) {
        const char *nl = memchr(line, '\n', (size_t)(end - line));
        const char *next = nl ? nl + 1 : end;
        uint64_t folded;
        const char *le = line_end(line, nl ? nl : end, &folded);
        od_tr_hits_of(s.ix, line, line, le, h);
        s.line_ctx = h->contexts;
        int table = 0;
        if (!read_rules(&s, h, line, le, end, lineno)) {
            const char *after = read_tables(&s, h, line, le, end, prev, prev_end, &lineno, &in_procs, &table);
            if (!after)
                break;
            if (table) {
                prev = NULL;
                line = after;
                lineno++;
                continue;
            }
        }
        prev = line;
        prev_end = le;
        line = next;
        lineno += 1 + folded;
    }
    free(h);
    od_tr_tables_verdicts(s.t);
    finish_reports(&s);
    od_tr_index_free(s.ix);
    free(s.fold);
    if (s.nomem) {
        od_triage_free(s.t);
        return od_fail(err, OD_ERR_NOMEM, "out of memory while scanning");
    }
    *out = s.t;
    return OD_OK;
}
