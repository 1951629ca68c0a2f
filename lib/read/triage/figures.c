/* figures.c - the numbers each wording prints (rules.def's figures column). Every figure is
 * labelled by the words printed around it rather than by its position, which is what lets
 * one reader take all the PyTorch wordings (they reorder and rename fields between
 * releases). Each function reads one line (and, where the wording spans lines, those after
 * it) into the report the engine made for it. */
#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "read/triage/scan.h"

#define find od_tr_find_exact
#define starts od_tr_starts_exact
#define skip_sp od_tr_skip_sp
#define parse_uint od_tr_parse_uint
#define next_size od_tr_next_size
#define parse_size od_tr_parse_size
#define parse_xla_size od_tr_parse_xla_size
#define set od_tr_set_figure

int fig_none(tr_scan *s, od_oom_report *r, const od_tr_line *l);
int fig_none(tr_scan *s, od_oom_report *r, const od_tr_line *l)
{
    (void)s, (void)r, (void)l;
    return 1;
}

/* The device index after the first "GPU" (or marker) in [p, end), if a number follows it. */
static void device_after(od_oom_report *r, const char *p, const char *end, const char *marker)
{
    const char *me;
    const char *g = od_tr_find(p, p, end, marker, 0, &me);
    uint64_t d;
    if (g && parse_uint(skip_sp(me, end), end, &d) && d < 4096) {
        r->device = (int)d;
        r->have |= OD_HAVE_DEVICE;
    }
}

/* "N bytes" (any size) right after the phrase pat in [line, le): the request. */
static void request_after(od_oom_report *r, const char *line, const char *le, const char *pat)
{
    const char *e;
    od_tr_size t;
    if (od_tr_find(line, line, le, pat, 0, &e) && next_size(e, le, line, &t) && t.start <= skip_sp(e, le) + 1)
        set(r, OD_HAVE_REQUESTED, &r->requested_bytes, &t);
}

/* ---------- PyTorch ---------- */

/* "Process 31337 has 12.40 GiB memory in use": its PID, the digits before " has ". */
static uint64_t pid_before(const char *msg, const char *has)
{
    const char *d = has;
    while (d > msg && isdigit((unsigned char)d[-1]))
        d--;
    uint64_t pid = 0;
    if (d < has)
        parse_uint(d, has, &pid);
    return pid;
}

/* What parse_torch gathers besides the report's own figures. */
typedef struct {
    uint64_t reserved_total, total_unit, allocated_unit;
    int have_total, cached;
} torch_extra;

/* Does the message end at a with the beginning of label (a paste cut mid-word: "37.21 GiB is
 * allo")? At least four letters of it, then only closing punctuation. */
static int cut_label(const char *a, const char *end, const char *label)
{
    const char *p = a;
    size_t k = 0, n = strlen(label);
    while (k < n && label[k] == ' ' && p < end && OD_TR_BLANK(*p)) {
        while (p < end && OD_TR_BLANK(*p))
            p++;
        k++;
    }
    size_t m = 0;
    while (k + m < n && p + m < end && OD_TR_FOLD(p[m]) == OD_TR_FOLD(label[k + m]))
        m++;
    if (m < 4 || k + m == n)
        return 0;
    for (p += m; p < end; p++)
        if (!OD_TR_BLANK(*p) && !strchr("`'\".)]", *p))
            return 0;
    return 1;
}

/* Is label (a phrase beginning with a space) right after a, whole or cut by the message's end? */
static int after(const char *a, const char *end, const char *label)
{
    return od_tr_starts(a, end, label) != NULL || cut_label(a, end, label);
}

/* One size of a PyTorch message, labelled by the words around it (t runs to its unit). */
static void torch_figure(tr_scan *s, od_oom_report *r, const char *msg, const char *end, const od_tr_size *t,
                         torch_extra *x)
{
    const char *a = t->end, *h;
    if (od_tr_ends(msg, t->start, "Tried to allocate ") || od_tr_ends(msg, t->start, "Tried to allocate more than "))
        set(r, OD_HAVE_REQUESTED, &r->requested_bytes, t);
    else if (od_tr_ends(msg, t->start, "total capacity of ") || od_tr_ends(msg, t->start, "total capacty of ") ||
             od_tr_starts(a, end, " total capacity"))
        set(r, OD_HAVE_CAPACITY, &r->capacity_bytes, t);
    else if (after(a, end, " already allocated") || after(a, end, " is allocated by PyTorch")) {
        if (!(r->have & OD_HAVE_ALLOCATED))
            x->allocated_unit = t->rounded ? t->unit : 0;
        set(r, OD_HAVE_ALLOCATED, &r->allocated_bytes, t);
    } else if (after(a, end, " is reserved by PyTorch but unallocated") || od_tr_starts(a, end, " cached)") ||
               od_tr_starts(a, end, " cached;")) {
        /* before 1.4, "N cached" is already reserved - allocated */
        set(r, OD_HAVE_RESERVED_UNALLOC, &r->reserved_unallocated_bytes, t);
        x->cached |= od_tr_starts(a, end, " cached") != NULL;
    } else if (after(a, end, " reserved in total by PyTorch")) {
        if (!x->have_total) {
            x->reserved_total = t->bytes;
            x->total_unit = t->rounded ? t->unit : 0;
            x->have_total = 1;
            r->rounded |= t->rounded;
        }
    } else if (od_tr_starts(a, end, " allowed"))
        set(r, OD_HAVE_ALLOWED, &r->allowed_bytes, t);
    else if (od_tr_starts(a, end, " free") || od_tr_starts(a, end, " is free"))
        set(r, OD_HAVE_FREE, &r->free_bytes, t);
    else if (od_tr_starts(a, end, " memory in use")) {
        if (od_tr_ends(msg, t->start, "this process has "))
            set(r, OD_HAVE_PROCESS, &r->process_bytes, t);
        else if ((h = od_tr_ends(msg, t->start, " has "))) {
            od_tr_add_other(s, r, pid_before(msg, h), t->bytes);
            r->rounded |= t->rounded;
        }
    }
}

/* In a container the process sees itself under another PID: without a "this process" line,
 * a "Process N" holding the pool plus at most 2 GiB of context and libraries is this one, and
 * so is the only one listed when it and the pool together exceed the device. */
static void self_among_others(od_oom_report *r)
{
    if ((r->have & OD_HAVE_PROCESS) || r->n_other == 0 || !(r->have & OD_HAVE_ALLOCATED))
        return;
    uint64_t pool = r->allocated_bytes + ((r->have & OD_HAVE_RESERVED_UNALLOC) ? r->reserved_unallocated_bytes : 0);
    size_t best = r->n_other;
    for (size_t i = 0; i < r->n_other; i++) {
        uint64_t b = r->other[i].bytes;
        /* ... or one that could not be another process: with this job's pool it would hold more
         * than the device (a message cut before its cache figure) */
        int impossible = (r->have & OD_HAVE_CAPACITY) && b + r->allocated_bytes > r->capacity_bytes + (r->capacity_bytes >> 7);
        if (((b + (pool >> 8) >= pool && b <= pool + (2ULL << 30)) || (impossible && r->n_other == 1)) &&
            (best == r->n_other || b < r->other[best].bytes))
            best = i;
    }
    if (best == r->n_other)
        return;
    r->process_bytes = r->other[best].bytes;
    r->have |= OD_HAVE_PROCESS;
    r->self_from_other = 1;
    memmove(&r->other[best], &r->other[best + 1], (r->n_other - best - 1) * sizeof r->other[0]);
    r->n_other--;
}

/* A PyTorch CUDA/ROCm message [msg, end). */
static void parse_torch(tr_scan *s, od_oom_report *r, const char *msg, const char *end)
{
    od_tr_size t;
    torch_extra x = {0, 0, 0, 0, 0};
    device_after(r, msg, end, "GPU");
    for (const char *p = msg; next_size(p, end, msg, &t); p = t.end)
        torch_figure(s, r, msg, end, &t, &x);
    /* 1.x prints the pool's total: reserved-but-unallocated = reserved - allocated, each printed
     * to two decimals, so the difference may be off by a hundredth of the larger unit. */
    if (x.have_total && (r->have & OD_HAVE_ALLOCATED) && !(r->have & OD_HAVE_RESERVED_UNALLOC)) {
        r->reserved_unallocated_bytes = x.reserved_total > r->allocated_bytes ? x.reserved_total - r->allocated_bytes : 0;
        r->have |= OD_HAVE_RESERVED_UNALLOC;
        uint64_t unit = x.total_unit > x.allocated_unit ? x.total_unit : x.allocated_unit;
        r->cache_error_bytes = unit / 100;
    }
    int cached = x.cached;
    /* The caching allocator prints the size it tried to reserve, not the tensor's; before 1.4
     * ("N cached") the request rounded to 512 B (real reports: 1.12 MiB, 12.50 MiB, 1024 KiB,
     * none a segment size). */
    r->request_is_segment = (r->have & OD_HAVE_REQUESTED) != 0 && !cached;
    r->msg_hint_expandable = find(msg, end, "expandable_segments") != NULL;
    r->garbage_figure = find(msg, end, "17179869184.00 GiB") != NULL;
    if ((od_tr_ifind(msg, end, "CUDA error: out of memory") || od_tr_ifind(msg, end, "CUDA driver error: out of memory")) &&
        !(r->have & OD_HAVE_REQUESTED))
        r->kind = OD_KIND_DRIVER;
    self_among_others(r);
    /* Windows/WSL: the driver spills into shared system memory before failing. */
    if ((r->have & OD_HAVE_ALLOCATED) && (r->have & OD_HAVE_CAPACITY) && r->allocated_bytes > r->capacity_bytes)
        r->spill = 1;
}

int fig_torch(tr_scan *s, od_oom_report *r, const od_tr_line *l);
int fig_torch(tr_scan *s, od_oom_report *r, const od_tr_line *l)
{
    /* "If you encounter CUDA out of memory, try ...": PyTorch's message never has a comma
     * right after its anchor unless the request follows: a mention. */
    const char *e = l->at;
    while (e < l->le && *e != ',' && *e != '.' && *e != ':' && *e != '(')
        e++;
    if (e < l->le && *e == ',' && !od_tr_ifind(l->at, e, "Tried"))
        r->mention = 1;
    char joined[2048];
    const char *jend = od_tr_join_message(l->at, l->le, l->end, joined, sizeof joined);
    parse_torch(s, r, jend ? joined : l->at, jend ? jend : l->le);
    if (r->framework == OD_FW_PYTORCH_CUDA || r->framework == OD_FW_PYTORCH_ROCM)
        od_tr_date_message(r, l->at, l->line, l->end);
    return 1;
}

/* PyTorch 0.4 and older (and Lua Torch): THC's messages print no figures; PyTorch's are dated. */
int fig_thc(tr_scan *s, od_oom_report *r, const od_tr_line *l);
int fig_thc(tr_scan *s, od_oom_report *r, const od_tr_line *l)
{
    (void)s;
    if (r->framework == OD_FW_PYTORCH_CUDA)
        od_tr_date_message(r, l->at, l->line, l->end);
    return 1;
}

/* cudaMallocAsync's wording: "Allocation on device 0 would exceed allowed memory. (out of
 * memory)" then "Currently allocated : X", "Requested : X", "Device limit : X", "Free
 * (according to CUDA): X", "PyTorch limit (set by user-supplied memory fraction)" and its
 * figure on the next line (2^64 bytes, unparsable, when no fraction is set). */
int fig_torch_async(tr_scan *s, od_oom_report *r, const od_tr_line *l);
int fig_torch_async(tr_scan *s, od_oom_report *r, const od_tr_line *l)
{
    (void)s;
    const char *p = l->line, *end = l->end;
    device_after(r, p, l->le, "on device");
    /* The message spans up to 8 lines (or one, when a log joined them). */
    const char *e = p;
    for (int n = 0; n < 8 && e < end; n++) {
        const char *nl = memchr(e, '\n', (size_t)(end - e));
        e = nl ? nl + 1 : end;
        if (e < end && (*skip_sp(e, end) == '\n' || starts(skip_sp(e, end), end, "Traceback")))
            break;
    }
    static const struct { const char *label; unsigned bit; size_t off; } f[] = {
        {"Currently allocated", OD_HAVE_ALLOCATED, offsetof(od_oom_report, allocated_bytes)},
        {"Requested", OD_HAVE_REQUESTED, offsetof(od_oom_report, requested_bytes)},
        {"Device limit", OD_HAVE_CAPACITY, offsetof(od_oom_report, capacity_bytes)},
        {"Free (according to CUDA)", OD_HAVE_FREE, offsetof(od_oom_report, free_bytes)},
        {"PyTorch limit", OD_HAVE_ALLOWED, offsetof(od_oom_report, allowed_bytes)},
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        const char *k = find(p, e, f[i].label), *c;
        od_tr_size t;
        if (!k || !(c = find(k + strlen(f[i].label), e, ":")))
            continue;
        const char *v = c + 1;
        while (v < e && isspace((unsigned char)*v))
            v++;
        if (parse_size(v, e, &t))
            set(r, f[i].bit, (uint64_t *)((char *)r + f[i].off), &t);
        else if (f[i].bit == OD_HAVE_ALLOWED && starts(v, e, "17179869184"))
            r->garbage_figure = 1; /* 2^64 bytes: no fraction set, no cap */
    }
    return 1;
}

int fig_mps(tr_scan *s, od_oom_report *r, const od_tr_line *l);
int fig_mps(tr_scan *s, od_oom_report *r, const od_tr_line *l)
{
    (void)s;
    char joined[2048];
    const char *jend = od_tr_join_message(l->at, l->le, l->end, joined, sizeof joined);
    const char *msg = jend ? joined : l->at, *end = jend ? jend : l->le;
    od_tr_size t;
    uint64_t other = 0;
    int have_other = 0;
    for (const char *p = msg; next_size(p, end, msg, &t); p = t.end) {
        if (od_tr_ends(msg, t.start, "MPS allocated: "))
            set(r, OD_HAVE_ALLOCATED, &r->allocated_bytes, &t);
        else if (od_tr_ends(msg, t.start, "other allocations: ")) {
            other = t.bytes;
            have_other = 1;
            r->rounded |= t.rounded;
        } else if (od_tr_ends(msg, t.start, "max allowed: "))
            set(r, OD_HAVE_ALLOWED, &r->allowed_bytes, &t);
        else if (od_tr_ends(msg, t.start, "Tried to allocate "))
            set(r, OD_HAVE_REQUESTED, &r->requested_bytes, &t);
    }
    /* What the Metal driver holds for this process: the pool plus other allocations. */
    if (have_other && (r->have & OD_HAVE_ALLOCATED)) {
        r->process_bytes = r->allocated_bytes + other;
        r->have |= OD_HAVE_PROCESS;
    }
    return 1;
}

/* ---------- libraries and the host ---------- */

int fig_nccl_calloc(tr_scan *s, od_oom_report *r, const od_tr_line *l);
int fig_nccl_calloc(tr_scan *s, od_oom_report *r, const od_tr_line *l)
{
    (void)s;
    request_after(r, l->line, l->le, "Failed to CUDA calloc");
    return 1;
}

/* NCCL's shared memory segment: "failed to extend /dev/shm/nccl-X to N bytes", "(size N)". */
int fig_shm_size(tr_scan *s, od_oom_report *r, const od_tr_line *l);
int fig_shm_size(tr_scan *s, od_oom_report *r, const od_tr_line *l)
{
    (void)s;
    const char *k = find(l->line, l->le, "/dev/shm"), *to;
    od_tr_size t;
    uint64_t v;
    if (k && (to = find(k, l->le, " to ")) && next_size(to + 4, l->le, l->line, &t))
        set(r, OD_HAVE_REQUESTED, &r->requested_bytes, &t);
    else if ((k = find(l->line, l->le, "(size ")) && parse_uint(k + 6, l->le, &v)) {
        r->requested_bytes = v;
        r->have |= OD_HAVE_REQUESTED;
    }
    return 1;
}

int fig_host_request(tr_scan *s, od_oom_report *r, const od_tr_line *l);
int fig_host_request(tr_scan *s, od_oom_report *r, const od_tr_line *l)
{
    (void)s;
    request_after(r, l->line, l->le, "you tried to allocate");
    request_after(r, l->line, l->le, "Unable to allocate");
    return 1;
}

/* The OOM killer's victim: "anon-rss:109819332kB" (dmesg may group digits: "153,700,88kB"). */
int fig_anon_rss(tr_scan *s, od_oom_report *r, const od_tr_line *l);
int fig_anon_rss(tr_scan *s, od_oom_report *r, const od_tr_line *l)
{
    (void)s;
    const char *k = find(l->line, l->le, "anon-rss:");
    if (!k)
        return 1;
    uint64_t kb = 0;
    int nd = 0;
    for (k += 9; k < l->le && (isdigit((unsigned char)*k) || *k == ',') && nd < 16; k++)
        if (*k != ',') {
            kb = kb * 10 + (uint64_t)(*k - '0');
            nd++;
        }
    if (nd && starts(k, l->le, "kB")) {
        r->process_bytes = kb << 10;
        r->have |= OD_HAVE_PROCESS;
    }
    return 1;
}

/* DeepSpeed prints "Requested:", "Free:", "Total:" (exact bytes, one a line) right before
 * "Workspace is null.": the last such triple in the lines just before it. */
int fig_deepspeed(tr_scan *s, od_oom_report *r, const od_tr_line *l);
int fig_deepspeed(tr_scan *s, od_oom_report *r, const od_tr_line *l)
{
    const char *lo = l->line;
    for (int n = 0; n < 8 && lo > s->buf; n++) { /* at most the stream's lines before an anchor */
        lo--;
        while (lo > s->buf && lo[-1] != '\n')
            lo--;
    }
    const char *p = lo, *hit = NULL;
    while ((p = find(p, l->line, "Requested:")) != NULL) {
        if (p == s->buf || p[-1] == '\n')
            hit = p;
        p += 10;
    }
    if (!hit)
        return 1;
    static const char *const keys[] = {"Requested:", "Free:", "Total:"};
    uint64_t v[3];
    p = hit;
    for (int k = 0; k < 3; k++) {
        const char *le = memchr(p, '\n', (size_t)(l->line - p));
        if (!le || !starts(p, le, keys[k]))
            return 1;
        const char *q = parse_uint(skip_sp(p + strlen(keys[k]), le), le, &v[k]);
        if (!q || skip_sp(q, le) != le)
            return 1;
        p = le + 1;
    }
    r->requested_bytes = v[0];
    r->free_bytes = v[1];
    r->capacity_bytes = v[2];
    r->have |= OD_HAVE_REQUESTED | OD_HAVE_FREE | OD_HAVE_CAPACITY;
    return 1;
}

/* ---------- vLLM ---------- */

/* vLLM V1: "To serve at least one request with the model's max seq len (N), (X GiB KV cache
 * is needed, which is larger than the available KV cache memory (Y GiB). Based on the
 * available memory, the estimated maximum model length is M." */
int fig_vllm_kv_needed(tr_scan *s, od_oom_report *r, const od_tr_line *l);
int fig_vllm_kv_needed(tr_scan *s, od_oom_report *r, const od_tr_line *l)
{
    (void)s;
    const char *k = l->at_end, *q, *le = l->le;
    od_tr_size t;
    parse_uint(skip_sp(k, le), le, &r->max_model_len);
    if ((q = find(k, le, "), (")) && next_size(q + 4, le, l->line, &t))
        set(r, OD_HAVE_REQUESTED, &r->requested_bytes, &t);
    if ((q = find(k, le, "available KV cache memory (")) && next_size(q + 27, le, l->line, &t))
        set(r, OD_HAVE_FREE, &r->free_bytes, &t);
    if ((q = find(k, le, "maximum model length is ")))
        parse_uint(q + 24, le, &r->kv_cache_tokens);
    return 1;
}

int fig_vllm_kv_stored(tr_scan *s, od_oom_report *r, const od_tr_line *l);
int fig_vllm_kv_stored(tr_scan *s, od_oom_report *r, const od_tr_line *l)
{
    (void)s;
    parse_uint(skip_sp(l->at_end, l->le), l->le, &r->max_model_len);
    const char *e, *c = od_tr_find(l->line, l->line, l->le, "stored in KV cache (", 0, &e);
    if (c)
        parse_uint(e, l->le, &r->kv_cache_tokens);
    return 1;
}

/* "Free memory on device cuda:1 (19.77/22.05 GiB) on startup is less than desired GPU memory
 * utilization (0.9, 19.84 GiB)": free / total, the unit written once after the total. */
int fig_vllm_startup(tr_scan *s, od_oom_report *r, const od_tr_line *l);
int fig_vllm_startup(tr_scan *s, od_oom_report *r, const od_tr_line *l)
{
    (void)s;
    const char *line = l->line, *le = l->le;
    const char *o = find(l->at, le, "(");
    const char *sl = o ? find(o, le, "/") : NULL;
    od_tr_size tot;
    if (sl && next_size(sl + 1, le, line, &tot)) {
        r->capacity_bytes = tot.bytes;
        r->have |= OD_HAVE_CAPACITY;
        r->rounded |= tot.rounded;
        char num[48];
        size_t n = (size_t)(sl - (o + 1));
        size_t ul = (size_t)(tot.end - tot.start);
        const char *u = tot.start;
        while (u < tot.end && (isdigit((unsigned char)*u) || *u == '.'))
            u++;
        u = skip_sp(u, tot.end);
        if (n + (size_t)(tot.end - u) + 2 < sizeof num && ul < sizeof num) {
            memcpy(num, o + 1, n);
            num[n] = ' ';
            memcpy(num + n + 1, u, (size_t)(tot.end - u));
            num[n + 1 + (size_t)(tot.end - u)] = '\0';
            od_tr_size fr;
            const char *ne = num + strlen(num);
            if (parse_size(skip_sp(num, ne), ne, &fr))
                set(r, OD_HAVE_FREE, &r->free_bytes, &fr);
        }
    }
    const char *ue, *ut = od_tr_find(line, line, le, "utilization (", 0, &ue);
    od_tr_size want;
    if (ut && next_size(ue, le, line, &want)) {
        /* the figure after the ratio: utilization x total, as vLLM printed it */
        const char *comma = find(ut, le, ",");
        if (comma && comma < want.start)
            set(r, OD_HAVE_REQUESTED, &r->requested_bytes, &want);
    }
    return 1;
}

/* ---------- XLA, ONNX Runtime ---------- */

/* XLA at compile time: "Ran out of memory in memory space hbm. Used 21.95G of 15.48G hbm." */
int fig_xla_compile(tr_scan *s, od_oom_report *r, const od_tr_line *l);
int fig_xla_compile(tr_scan *s, od_oom_report *r, const od_tr_line *l)
{
    (void)s;
    const char *k = find(l->at, l->le, "Used "), *of;
    od_tr_size used, lim;
    if (k && parse_xla_size(k + 5, l->le, &used) && (of = find(used.end, l->le, " of ")) &&
        parse_xla_size(of + 4, l->le, &lim)) {
        set(r, OD_HAVE_REQUESTED, &r->requested_bytes, &used);
        set(r, OD_HAVE_CAPACITY, &r->capacity_bytes, &lim);
    }
    return 1;
}

/* PyTorch/XLA on TPU: "Attempting to reserve 6.48G at the bottom of memory. That was not
 * possible. There are 6.78G free, 0B reserved, and 3.33G reservable."; older releases:
 * "Attempting to allocate 180.59M. That was not possible. There are 142.58M free.". */
int fig_xla_reserve(tr_scan *s, od_oom_report *r, const od_tr_line *l);
int fig_xla_reserve(tr_scan *s, od_oom_report *r, const od_tr_line *l)
{
    od_tr_size want, fr;
    const char *th = find(l->at_end, l->le, "There are ");
    if (!parse_xla_size(skip_sp(l->at_end, l->le), l->le, &want) || !th || !parse_xla_size(th + 10, l->le, &fr))
        return 0;
    if (od_tr_names(s, OD_CTX_JAX, 0) && !od_tr_names(s, OD_CTX_XLA_TORCH, 0))
        r->framework = OD_FW_JAX;
    set(r, OD_HAVE_REQUESTED, &r->requested_bytes, &want);
    set(r, OD_HAVE_FREE, &r->free_bytes, &fr);
    return 1;
}

int fig_ort_buffer(tr_scan *s, od_oom_report *r, const od_tr_line *l);
int fig_ort_buffer(tr_scan *s, od_oom_report *r, const od_tr_line *l)
{
    (void)s;
    uint64_t v;
    if (parse_uint(skip_sp(l->at_end, l->le), l->le, &v)) {
        r->requested_bytes = v;
        r->have |= OD_HAVE_REQUESTED;
    }
    return 1;
}

int fig_ort_available(tr_scan *s, od_oom_report *r, const od_tr_line *l);
int fig_ort_available(tr_scan *s, od_oom_report *r, const od_tr_line *l)
{
    (void)s;
    uint64_t v;
    const char *e;
    if (parse_uint(skip_sp(l->at_end, l->le), l->le, &v)) {
        r->free_bytes = v;
        r->have |= OD_HAVE_FREE;
    }
    if (od_tr_find(l->line, l->line, l->le, "is smaller than requested bytes of", 0, &e) &&
        parse_uint(skip_sp(e, l->le), l->le, &v)) {
        r->requested_bytes = v;
        r->have |= OD_HAVE_REQUESTED;
    }
    return 1;
}

/* ---------- driver statuses ---------- */

/* The stream executor's "failed to allocate X (N bytes) from device": N. */
static int se_request(const char *line, const char *le, uint64_t *out)
{
    const char *k = find(line, le, "failed to allocate ");
    const char *q = k ? find(k, le, "(") : NULL;
    const char *e = q ? parse_uint(q + 1, le, out) : NULL;
    return e && starts(skip_sp(e, le), le, "bytes");
}

int fig_driver(tr_scan *s, od_oom_report *r, const od_tr_line *l);
int fig_driver(tr_scan *s, od_oom_report *r, const od_tr_line *l)
{
    const char *line = l->line, *le = l->le, *k;
    uint64_t v;
    od_tr_size t;
    /* refused while creating a CUDA context (cuCtxCreate in the stack below) */
    static const char *const ctx_calls[] = {"cuCtxCreate", "cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxSetFlags"};
    const char *p = line;
    for (int n = 0; n < 8 && p < l->end && !r->at_context; n++) {
        const char *nl = memchr(p, '\n', (size_t)(l->end - p)), *ne = nl ? nl : l->end;
        for (size_t i = 0; i < sizeof ctx_calls / sizeof ctx_calls[0]; i++)
            r->at_context |= find(p, ne, ctx_calls[i]) != NULL;
        p = nl ? nl + 1 : l->end;
    }
    /* Ray's worker prefix "(pid=4241) ": the process that wrote the line */
    if ((k = find(line, l->at, "(pid=")) && parse_uint(k + 5, le, &v) && v)
        r->log_pid = r->log_pid_last = v;
    if (od_tr_names(s, OD_CTX_ONNX, 1))
        r->framework = OD_FW_ONNXRUNTIME;
    /* "failed to allocate X (N bytes) from device" is the stream executor's (TF, XLA). */
    if ((r->framework == OD_FW_PYTORCH_CUDA || (r->framework == OD_FW_OTHER && !r->library[0])) &&
        find(line, le, "from device")) {
        r->framework = OD_FW_TENSORFLOW;
        r->library[0] = '\0';
    }
    if (find(line, le, " on host")) { /* pinned host memory: "failed to alloc N bytes on host" */
        r->framework = OD_FW_HOST;
        r->kind = OD_KIND_HOST_RAM;
        od_tr_set_library(r, "pinned");
        if ((k = find(line, le, "failed to alloc ")) && parse_uint(k + 16, le, &v)) {
            r->requested_bytes = v;
            r->have |= OD_HAVE_REQUESTED;
        }
    } else if (se_request(line, le, &v)) {
        r->requested_bytes = r->backoff_last_bytes = v;
        r->have |= OD_HAVE_REQUESTED;
    } else if ((k = find(line, le, "failed to allocate ")) && next_size(k + 19, le, line, &t)) {
        set(r, OD_HAVE_REQUESTED, &r->requested_bytes, &t);
        r->backoff_last_bytes = r->requested_bytes;
    }
    return 1;
}

/* ---------- TensorFlow and XLA's BFC allocator ---------- */

/* Requested size in a TF/XLA line: exact "(rounded to N)" or "(NB)" beats the rounded
 * figure printed before it. */
static int tf_request(const char *p, const char *end, uint64_t *bytes, int *rounded)
{
    const char *rt = find(p, end, "rounded to ");
    uint64_t v;
    if (rt && parse_uint(rt + 11, end, &v)) {
        *bytes = v;
        *rounded = 0;
        return 1;
    }
    const char *a = find(p, end, "allocat");
    od_tr_size t;
    if (!a || !next_size(a, end, p, &t))
        return 0;
    const char *q = skip_sp(t.end, end);
    if (q < end && *q == '(' && parse_uint(q + 1, end, &v)) {
        *bytes = v;
        *rounded = 0;
        return 1;
    }
    *bytes = t.bytes;
    *rounded = t.rounded;
    return 1;
}

int fig_tf_bfc(tr_scan *s, od_oom_report *r, const od_tr_line *l);
int fig_tf_bfc(tr_scan *s, od_oom_report *r, const od_tr_line *l)
{
    (void)s;
    uint64_t b;
    int rd;
    r->xla = 1;
    if (tf_request(l->at, l->le, &b, &rd)) {
        r->requested_bytes = b;
        r->rounded = rd;
        r->have |= OD_HAVE_REQUESTED;
    }
    return 1;
}

/* "shape[128,768,64,64] and type float": elements x dtype size, or 0. */
static uint64_t tf_shape_bytes(const char *p, const char *end, const char *hint, const char *hint_end, char *dtype,
                               size_t dtsz, int *from_op)
{
    /* TF 2.x "shape[128,768]", TF 1.x "tensor of shape [4096]" */
    const char *sh = find(p, end, "shape[");
    const char *q = sh ? sh + 6 : NULL;
    if (!sh && (sh = find(p, end, "shape [")))
        q = sh + 7;
    if (!sh)
        return 0;
    unsigned __int128 n = 1;
    for (;;) {
        uint64_t d;
        q = skip_sp(q, end);
        const char *e = parse_uint(q, end, &d);
        if (!e)
            return 0;
        n *= d;
        if (n > (unsigned __int128)(UINT64_MAX / 32))
            return 0;
        q = skip_sp(e, end);
        if (q < end && *q == ',') {
            q++;
            continue;
        }
        if (q < end && *q == ']')
            break;
        return 0;
    }
    const char *ty = find(q, end, "type ");
    *from_op = 0;
    if (ty && ty - q <= 16) {
        ty += 5;
    } else if (hint && (ty = find(hint, hint_end, "T=DT_"))) {
        /* TF 1.x printed no type; the op's node on the next line names its T attribute
         * ("[[Node: ... = SpaceToBatchND[T=DT_FLOAT, ...") */
        ty += 5;
        end = hint_end;
        *from_op = 1;
    } else {
        return 0;
    }
    char low[24];
    size_t l = 0;
    for (const char *te = ty; te < end && l < sizeof low - 1 && (isalnum((unsigned char)*te) || *te == '_'); te++)
        low[l++] = *from_op ? (char)tolower((unsigned char)*te) : *te;
    low[l] = '\0';
    unsigned es = od_tf_dtype_size(low, l);
    if (!es)
        return 0;
    if (l > dtsz - 1)
        l = dtsz - 1;
    memcpy(dtype, low, l);
    dtype[l] = '\0';
    return (uint64_t)(n * es);
}

/* TF/XLA's exception ("ResourceExhaustedError: OOM when allocating tensor with shape[...]",
 * "RESOURCE_EXHAUSTED: Out of memory while trying to allocate N bytes"): the tensor's own
 * size (shape x dtype, exact) when printed, else the request; the framework by the input. */
int fig_tf_exception(tr_scan *s, od_oom_report *r, const od_tr_line *l);
int fig_tf_exception(tr_scan *s, od_oom_report *r, const od_tr_line *l)
{
    const char *line = l->line, *le = l->le, *end = l->end, *rt;
    if (od_tr_names(s, OD_CTX_XLA_TORCH, 0))
        r->framework = OD_FW_PYTORCH_XLA;
    else if (!od_tr_names(s, OD_CTX_TF, 0) && (rt = od_tr_runtime(s, OD_CTX_RUNTIME))) {
        r->framework = OD_FW_OTHER; /* PaddlePaddle raises its own ResourceExhaustedError */
        od_tr_set_library(r, rt);
    }
    else if (od_tr_names(s, OD_CTX_JAX, 1) || find(line, le, "Failed to allocate request for") ||
             (od_tr_names(s, OD_CTX_JAX, 0) && !od_tr_ifind(line, le, "OOM when allocating tensor")))
        r->framework = OD_FW_JAX;
    /* the next line: a TF 1.x node, or the figure a word wrap moved there */
    const char *nx = le < end ? le + 1 : end;
    const char *ne = nx < end ? memchr(nx, '\n', (size_t)(end - nx)) : NULL;
    if (!ne)
        ne = end;
    const char *node = skip_sp(nx, ne);
    uint64_t shape = tf_shape_bytes(line, le, starts(node, ne, "[[Node:") ? node : NULL, ne, r->dtype, sizeof r->dtype,
                                    &r->dtype_from_op);
    uint64_t b;
    int rd;
    if (shape) {
        r->requested_bytes = shape;
        r->rounded = 0;
        r->have |= OD_HAVE_REQUESTED;
    } else if (tf_request(line, le, &b, &rd) ||
               (find(nx, ne, "while trying to allocate ") && tf_request(nx, ne, &b, &rd))) {
        /* "Resource exhausted: Out" / "of memory while trying to allocate N bytes.": a word
         * wrap puts the figure on the next line (jax#788) */
        r->requested_bytes = b;
        r->rounded = rd;
        r->have |= OD_HAVE_REQUESTED;
    }
    device_after(r, line, le, "GPU ");
    return 1;
}

/* The BFC "Stats:" dump: "Limit: N", "InUse: N" (plain bytes); XLA's BufferAssignment stats. */
int fig_tf_limit(tr_scan *s, od_oom_report *r, const od_tr_line *l);
int fig_tf_limit(tr_scan *s, od_oom_report *r, const od_tr_line *l)
{
    (void)s;
    uint64_t v;
    if (!parse_uint(skip_sp(l->at_end, l->le), l->le, &v))
        return 0;
    r->capacity_bytes = v;
    r->have |= OD_HAVE_CAPACITY;
    return 1;
}

int fig_tf_inuse(tr_scan *s, od_oom_report *r, const od_tr_line *l);
int fig_tf_inuse(tr_scan *s, od_oom_report *r, const od_tr_line *l)
{
    (void)s;
    uint64_t v;
    if (!parse_uint(skip_sp(l->at_end, l->le), l->le, &v))
        return 0;
    r->allocated_bytes = v;
    r->have |= OD_HAVE_ALLOCATED;
    return 1;
}

int fig_xla_total(tr_scan *s, od_oom_report *r, const od_tr_line *l);
int fig_xla_total(tr_scan *s, od_oom_report *r, const od_tr_line *l)
{
    (void)s;
    od_tr_size t;
    if (r->program_bytes || !next_size(l->at_end, l->le, l->line, &t))
        return 0;
    r->program_bytes = t.bytes;
    return 1;
}

/* TF's start-up lines: the device's total and free memory when TF started. */
int fig_tf_device(tr_scan *s, od_oom_report *r, const od_tr_line *l);
int fig_tf_device(tr_scan *s, od_oom_report *r, const od_tr_line *l)
{
    (void)r;
    od_tr_size t;
    const char *e;
    int total = OD_TR_FOLD(*l->at) == 't';
    if (!next_size(l->at_end, l->le, l->line, &t))
        return 0;
    if (total && !s->have_device_total) {
        s->device_total = t.bytes;
        s->have_device_total = 1;
    } else if (!total && !s->have_device_free) {
        s->device_free = t.bytes;
        s->have_device_free = 1;
    }
    if (total && od_tr_find(l->line, t.end, l->le, "freeMemory:", 0, &e) && next_size(e, l->le, l->line, &t) &&
        !s->have_device_free) {
        s->device_free = t.bytes;
        s->have_device_free = 1;
    }
    return 1;
}

/* ---------- any other runtime ---------- */

typedef struct {
    unsigned bit;
    const char *before, *after;
} label_row;

static const label_row labels[] = {
#define RULE(...)
#define READER(...)
#define LABEL(bit, before, after) {bit, before, after},
#include "read/triage/rules.def"
#undef RULE
#undef READER
#undef LABEL
};

static uint64_t *field_of(od_oom_report *r, unsigned bit)
{
    switch (bit) {
    case OD_HAVE_REQUESTED: return &r->requested_bytes;
    case OD_HAVE_FREE: return &r->free_bytes;
    case OD_HAVE_CAPACITY: return &r->capacity_bytes;
    default: return &r->allocated_bytes;
    }
}

/* Is one phrase of the '|'-separated list at the end of [lo, p) (before == 1), or at p? */
static int list_at(const char *list, const char *lo, const char *p, const char *hi, int before)
{
    char ph[64];
    for (const char *s = list; *s;) {
        const char *e = strchr(s, '|');
        if (!e)
            e = s + strlen(s);
        size_t n = (size_t)(e - s) < sizeof ph - 1 ? (size_t)(e - s) : sizeof ph - 1;
        memcpy(ph, s, n);
        ph[n] = '\0';
        if (n && (before ? od_tr_ends(lo, p, ph) != NULL : od_tr_starts(p, hi, ph) != NULL))
            return 1;
        s = *e ? e + 1 : e;
    }
    return 0;
}

/* Labels after which a plain number (no unit) is bytes: "buffer of size 838447104",
 * "Required: 589824". */
static const char *const bare_labels[] = {"size", "size:", "Required:", "Hardware limit:", "limit:"};

/* A size token at p: a size with its unit, or (bare) a plain number of at least 4 KiB. */
static int size_or_bytes(const char *p, const char *end, od_tr_size *t, int *bare)
{
    uint64_t v;
    const char *e;
    *bare = 0;
    if (parse_size(p, end, t) || parse_xla_size(p, end, t))
        return 1;
    /* digits grouped by commas: "25,600,000 bytes" */
    const char *q = p;
    v = 0;
    int groups = 0;
    for (int digits = 0; q < end && (isdigit((unsigned char)*q) || (*q == ',' && digits && q + 3 < end &&
                                                                    isdigit((unsigned char)q[1]) && isdigit((unsigned char)q[2]) &&
                                                                    isdigit((unsigned char)q[3]))); q++) {
        if (*q == ',') {
            groups++;
            continue;
        }
        if (++digits > 19)
            return 0;
        v = v * 10 + (uint64_t)(*q - '0');
    }
    if (groups && od_tr_starts(q, end, " bytes")) {
        t->start = p;
        t->end = od_tr_starts(q, end, " bytes");
        t->bytes = v;
        t->rounded = 0;
        t->unit = 1;
        return 1;
    }
    if (!(e = parse_uint(p, end, &v)) || v < 4096 || (e < end && (isalnum((unsigned char)*e) || *e == '.')))
        return 0;
    t->start = p;
    t->end = e;
    t->bytes = v;
    t->rounded = 0;
    t->unit = 1;
    *bare = 1;
    return 1;
}

/* The next size token in [p, end) at a word boundary (line: the line's start). */
static int next_token(const char *p, const char *end, const char *line, od_tr_size *t, int *bare)
{
    for (; p < end; p++) {
        if (!isdigit((unsigned char)*p) || (p > line && (isalnum((unsigned char)p[-1]) || p[-1] == '.' || p[-1] == '_')))
            continue;
        if (size_or_bytes(p, end, t, bare))
            return 1;
        while (p + 1 < end && (isdigit((unsigned char)p[1]) || p[1] == '.'))
            p++;
    }
    return 0;
}

/* Label the size t (the line begins at line) by the LABEL rows; 1 when it set a figure. */
static int label_size(od_oom_report *r, const char *line, const char *le, const od_tr_size *t, int bare)
{
    const char *b = t->start;
    while (b > line && (OD_TR_BLANK(b[-1]) || b[-1] == '(')) /* "allocate (N bytes)" */
        b--;
    if (bare) {
        int ok = 0;
        for (size_t i = 0; i < sizeof bare_labels / sizeof bare_labels[0] && !ok; i++)
            ok = od_tr_ends(line, b, bare_labels[i]) != NULL;
        if (!ok)
            return 0;
    }
    for (size_t i = 0; i < sizeof labels / sizeof labels[0]; i++) {
        if ((r->have & labels[i].bit) || !((*labels[i].before && list_at(labels[i].before, line, b, le, 1)) ||
                                           (*labels[i].after && list_at(labels[i].after, line, t->end, le, 0))))
            continue;
        set(r, labels[i].bit, field_of(r, labels[i].bit), t);
        return 1;
    }
    return 0;
}

/* Read the labelled sizes of [line, le); a label that ends the line takes the first size of the
 * next line (a logger wrapped the figure there). */
static void labelled_sizes(od_oom_report *r, const char *line, const char *le, const char *end)
{
    od_tr_size t;
    int bare;
    for (const char *p = line; next_token(p, le, line, &t, &bare); p = t.end)
        label_size(r, line, le, &t, bare);
    const char *q = le;
    while (q > line && OD_TR_BLANK(q[-1]))
        q--;
    const char *nx = le < end ? le + 1 : end, *ne = nx < end ? memchr(nx, '\n', (size_t)(end - nx)) : NULL;
    if (!ne)
        ne = end;
    const char *v = nx;
    while (v < ne && OD_TR_BLANK(*v))
        v++;
    if (v < ne && q > line && isalpha((unsigned char)q[-1]) && size_or_bytes(v, ne, &t, &bare) && !bare) {
        /* the size, as if it stood right after the line's last word */
        for (size_t i = 0; i < sizeof labels / sizeof labels[0]; i++)
            if (!(r->have & labels[i].bit) && *labels[i].before && list_at(labels[i].before, line, q, le, 1)) {
                set(r, labels[i].bit, field_of(r, labels[i].bit), &t);
                break;
            }
    }
}

/* Words on a generic line that say the memory it failed for is the host's. */
static const char *const host_words[] = {"host memory", "system memory", "CPU memory", "RAM", "pinned memory",
                                         "host allocation"};

int fig_generic(tr_scan *s, od_oom_report *r, const od_tr_line *l);
int fig_generic(tr_scan *s, od_oom_report *r, const od_tr_line *l)
{
    const char *line = l->line, *le = l->le;
    int host = 0;
    for (size_t i = 0; i < sizeof host_words / sizeof host_words[0]; i++)
        host |= od_tr_ifind(line, le, host_words[i]) != NULL;
    if (host) {
        r->framework = OD_FW_HOST;
        r->kind = OD_KIND_HOST_RAM;
    } else if (!r->library[0] && !od_tr_names(s, OD_CTX_DEVICE, 1) && !od_tr_names(s, OD_CTX_DEVICE, 0) &&
               !od_tr_names(s, OD_CTX_ENGINE, 0) && !od_tr_names(s, OD_CTX_RUNTIME, 0)) {
        return 0; /* no device, no GPU runtime anywhere: nothing says this is GPU memory */
    }
    labelled_sizes(r, line, le, l->end);
    device_after(r, line, le, "device");
    if (!(r->have & OD_HAVE_DEVICE))
        device_after(r, line, le, "GPU");
    return 1;
}

/* PaddlePaddle: "Cannot allocate X memory on GPU N, [Y memory has been allocated and]
 * available memory is only Z." (Z may be wrapped onto the next line), and the fraction
 * setting it names a few lines below when one caps it. */
int fig_paddle(tr_scan *s, od_oom_report *r, const od_tr_line *l);
int fig_paddle(tr_scan *s, od_oom_report *r, const od_tr_line *l)
{
    (void)s;
    const char *line = l->line, *le = l->le, *e;
    od_tr_size t;
    if (od_tr_find(line, l->at, le, "Cannot allocate", 0, &e) && next_size(e, le, line, &t))
        set(r, OD_HAVE_REQUESTED, &r->requested_bytes, &t);
    const char *m = od_tr_find(line, l->at, le, "memory has been allocated", 0, NULL);
    if (m) {
        const char *b = m;
        while (b > line && OD_TR_BLANK(b[-1]))
            b--;
        const char *d = b;
        while (d > line && !OD_TR_BLANK(d[-1]))
            d--;
        if (parse_size(d, b, &t))
            set(r, OD_HAVE_ALLOCATED, &r->allocated_bytes, &t);
    }
    labelled_sizes(r, line, le, l->end);
    device_after(r, l->at, le, "GPU");
    /* "FLAGS_fraction_of_gpu_memory_to_use is 0.50 now", within the message's lines */
    const char *p = le;
    for (int n = 0; n < 16 && p < l->end; n++) {
        const char *nl = memchr(p + 1, '\n', (size_t)(l->end - p - 1));
        const char *ne = nl ? nl : l->end;
        const char *f = od_tr_find(p, p, ne, "FLAGS_fraction_of_gpu_memory_to_use is", 0, &e);
        uint64_t whole, frac = 0;
        const char *q;
        if (f && (q = parse_uint(skip_sp(e, ne), ne, &whole)) && whole == 0 && q < ne && *q == '.') {
            const char *d = q + 1;
            int digits = 0;
            for (; d < ne && isdigit((unsigned char)*d) && digits < 3; d++, digits++)
                frac = frac * 10 + (uint64_t)(*d - '0');
            while (digits++ < 3)
                frac *= 10;
            r->fraction_permille = (unsigned)frac;
            break;
        }
        p = ne;
    }
    return 1;
}

/* Triton: "Required: 589824, Hardware limit: 101376" (bytes of shared memory per block). */
int fig_triton(tr_scan *s, od_oom_report *r, const od_tr_line *l);
int fig_triton(tr_scan *s, od_oom_report *r, const od_tr_line *l)
{
    (void)s;
    const char *e;
    uint64_t v;
    if (od_tr_find(l->line, l->at, l->le, "Required:", 0, &e) && parse_uint(skip_sp(e, l->le), l->le, &v)) {
        r->requested_bytes = v;
        r->have |= OD_HAVE_REQUESTED;
    }
    e = NULL;
    if (od_tr_find(l->line, l->at, l->le, "Hardware limit", OD_TR_PREFIX, &e)) {
        while (e < l->le && isalpha((unsigned char)*e)) /* "limit:" or "limitation:" */
            e++;
    }
    if (e && *e == ':' && parse_uint(skip_sp(e + 1, l->le), l->le, &v)) {
        r->capacity_bytes = v;
        r->have |= OD_HAVE_CAPACITY;
    }
    return 1;
}

/* SGLang: "max_total_tokens=N is larger than the profiled value -M": a KV budget of none (a
 * positive profiled value only trims the cache: not a failure). */
int fig_sglang_kv(tr_scan *s, od_oom_report *r, const od_tr_line *l);
int fig_sglang_kv(tr_scan *s, od_oom_report *r, const od_tr_line *l)
{
    (void)s, (void)r;
    if (!od_tr_starts(l->at, l->le, "is larger than the profiled value"))
        return 1;
    const char *v = skip_sp(l->at_end, l->le);
    return v < l->le && (*v == '-' || *v == '0') ? 1 : 0;
}
