/* torchver.c - the first PyTorch release of each allocator setting and memory API, and
 * the releases an OOM message's wording or a snapshot's keys allow.
 *
 * Release dates used to place a pull request in a release (a PR is in the first release
 * whose branch was cut after it merged): 1.3 Oct 2019, 1.4 Jan 2020, 1.8 Mar 2021,
 * 1.9 Jun 2021, 1.10 Oct 2021 (cut Sep), 1.11 Mar 2022 (cut Feb), 1.12 Jun 2022,
 * 1.13 Oct 2022 (cut Sep), 2.0 Mar 2023 (cut Feb), 2.1 Oct 2023 (cut Aug), 2.2 Jan 2024
 * (cut Dec), 2.3 Apr 2024 (cut Mar), 2.4 Jul 2024 (cut Jun), 2.5 Oct 2024 (cut Sep),
 * 2.7 Apr 2025 (cut Mar), 2.8 Aug 2025 (cut Jun), 2.9 Oct 2025 (cut Sep).
 *
 * Two directions of caution. A feature's first release, when unsure, is the later
 * candidate: advice then never names a setting a release lacks. A lower bound drawn from
 * evidence, when unsure, is the earlier candidate: the bound then never claims a release
 * newer than the one that printed the evidence. */
#include "base/torchver.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    unsigned major, minor;
    const char *name;
    const char *named;   /* the text an advice sentence names it by (NULL: none reads it) */
} feature_row;

static const feature_row features[OD_TORCH_N_FEATURES] = {
    /* PR #44742 "Don't split oversize cached blocks" (mwootton) added PYTORCH_CUDA_ALLOC_CONF
     * with its first option, max_split_size_mb. It was still in review on 2021-01-25
     * (ezyang, pytorch issue #18626: "will be setting a precedent to allow configurable
     * knobs on the memory allocator") and landed in early 2021, so 1.8 or 1.9 may already
     * read it: unsure. 1.10 is the first release whose OOM message names both ("If
     * reserved memory is >> allocated memory try setting max_split_size_mb ... See
     * documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF"), so 1.10. */
    [OD_TORCH_ALLOC_CONF] = {1, 10, "PYTORCH_CUDA_ALLOC_CONF", NULL},
    [OD_TORCH_MAX_SPLIT_SIZE_MB] = {1, 10, "max_split_size_mb", "max_split_size_mb"},
    /* PR #74213 "[CUDACachingAllocator] Better use of blocks with rounding of allocation
     * sizes" (banitag1, opened 2022-03-15, after 1.11's cut): the single-number form
     * roundup_power2_divisions:4. */
    [OD_TORCH_ROUNDUP_POWER2_DIVISIONS] = {1, 12, "roundup_power2_divisions", "roundup_power2_divisions"},
    /* PR #87290 "Modified roundup_power2_divisions to specify the number of divisions for
     * each power of two interval" (c-odrin, Oct-Nov 2022, before 2.0's cut): the list
     * form, intervals from 1 MB to 64 GB and ">" for the rest. PR #93942 (Feb 2023) made
     * a skipped interval inherit the previous one; advice lists every interval, so the
     * difference does not matter. */
    [OD_TORCH_ROUNDUP_POWER2_LIST] = {2, 0, "roundup_power2_divisions:[256:1,512:2,1024:4,>:8]", NULL},
    /* PR #74261 "[CUDACachingAlloc/GPUInference] Implement garbage collection without GPU
     * sync" (jaewonlee-fb, 2022-03-15). */
    [OD_TORCH_GARBAGE_COLLECTION_THRESHOLD] = {1, 12, "garbage_collection_threshold",
        "garbage_collection_threshold"},
    /* PR #96995 "Expandable blocks in allocator" (zdevito, in review 2023-04-11; PR #99933
     * of 2023-04-24 says it "has been merged from OSS"), after 2.0 was released. */
    [OD_TORCH_EXPANDABLE_SEGMENTS] = {2, 1, "expandable_segments", "expandable_segments"},
    /* PR #82682 "(Re-open) Adds cudaMallocAsync as an alternative backend for the CUDA
     * allocator" (eqy, opened 2022-08-02; first attempt #65365 by mcarilli, 2021). Still
     * being debugged in mid-August, so whether it made 1.13's September cut is unsure:
     * 2.0. */
    [OD_TORCH_BACKEND_CUDA_MALLOC_ASYNC] = {2, 0, "backend:cudaMallocAsync", "backend:cudaMallocAsync"},
    /* PR #108488 "[CUDA Host Allocator] Add support of CudaHostRegister" (banitag1, opened
     * 2023-09-03, still in review 2023-10-05), after 2.1's August cut. */
    [OD_TORCH_PINNED_USE_CUDA_HOST_REGISTER] = {2, 2, "pinned_use_cuda_host_register", NULL},
    /* PR #48172 "[Feature] Allow user to specify a fraction of the GPU memory" (CalvinXKY,
     * Nov 2020; pytorch issue #58466 uses it on torch 1.8.1). */
    [OD_TORCH_SET_PER_PROCESS_MEMORY_FRACTION] = {1, 8, "torch.cuda.set_per_process_memory_fraction",
        "set_per_process_memory_fraction"},
    /* PR #27361 "Comprehensive-ish instrumentation for CUDA memory allocator" (jma127,
     * opened 2019-10-04, after 1.3's release) added memory_stats, memory_summary,
     * memory_snapshot and reset_peak_memory_stats. */
    [OD_TORCH_MEMORY_SUMMARY] = {1, 4, "torch.cuda.memory_summary", NULL},
    [OD_TORCH_MEMORY_STATS] = {1, 4, "torch.cuda.memory_stats", NULL},
    /* empty_cache predates the 0.4 API (it is in 0.3 or earlier); the exact first release
     * was not checked, and 0.4 is the conservative choice. */
    [OD_TORCH_EMPTY_CACHE] = {0, 4, "torch.cuda.empty_cache", NULL},
    /* 0.4.0 added memory_allocated / max_memory_allocated / memory_cached (0.4.0 release
     * notes, "torch.cuda" section). */
    [OD_TORCH_MAX_MEMORY_ALLOCATED] = {0, 4, "torch.cuda.max_memory_allocated", NULL},
    [OD_TORCH_RESET_PEAK_MEMORY_STATS] = {1, 4, "torch.cuda.reset_peak_memory_stats", NULL},
    /* PR #82146 "annotated allocator snapshots" (zdevito, Aug 2022): the private
     * torch.cuda.memory._record_memory_history(enabled: bool) and blocks' "history" in
     * _snapshot(). The bool form still works in every later release: torch/cuda/memory.py
     * dispatches `if isinstance(enabled, bool): return _record_memory_history_legacy(...)`. */
    [OD_TORCH_RECORD_MEMORY_HISTORY] = {1, 13, "torch.cuda.memory._record_memory_history(True)",
        "_record_memory_history"},
    /* PR #86241 "Caching allocator tracing" (zdevito, 2022-10-04): trace_alloc_max_entries
     * and the device_traces it fills, after 1.13's cut. */
    [OD_TORCH_RECORD_MEMORY_HISTORY_TRACE] = {2, 0, "torch.cuda.memory._record_memory_history(True, trace_alloc_max_entries=N)", NULL},
    /* The string-valued signature (enabled="all"|"state"|None, context=, stacks=,
     * max_entries=) with the bool one kept as _record_memory_history_legacy
     * (torch/cuda/memory.py), documented with _dump_snapshot on "Understanding CUDA Memory
     * Usage" (docs/source/torch_cuda_memory.rst, created 2023-08-23, first in the 2.1
     * docs; pytorch.org/docs/2.0 has neither). */
    [OD_TORCH_RECORD_MEMORY_HISTORY_ALL] = {2, 1, "torch.cuda.memory._record_memory_history(enabled=\"all\", max_entries=N)",
        "_record_memory_history(max_entries"},
    [OD_TORCH_DUMP_SNAPSHOT] = {2, 1, "torch.cuda.memory._dump_snapshot", "_dump_snapshot"},
    /* PR #131152 "Implements torch.cuda.MemPool() API" (syed-ahmed, opened 2024-07-19);
     * use_mem_pool routing landed as #134685 on 2024-08-29, days before 2.5's cut, and
     * the API was documented only by #148374 (Mar 2025). Likely 2.5 (experimental);
     * unsure, so 2.6. */
    [OD_TORCH_MEMPOOL] = {2, 6, "torch.cuda.MemPool", "torch.cuda.MemPool"},
    /* PR #69508 added use_reentrant to torch.utils.checkpoint.checkpoint (pytorch issue
     * #71322, 2022-01-14: "The use_reentrant flag was introduced ... in #69508"), before
     * 1.11's February cut. Not passing it warns from 2.1 (#100551). */
    [OD_TORCH_CHECKPOINT_USE_REENTRANT] = {1, 11, "torch.utils.checkpoint.checkpoint(use_reentrant=False)", NULL},
    /* PR #88015 "[mta][foreach] Implement fused adamw" (crcrpar, Oct-Nov 2022); #95415,
     * the 2.0 cherry-pick of #95241 (Feb 2023), documents AdamW's fused as opt-in. */
    [OD_TORCH_ADAMW_FUSED] = {2, 0, "torch.optim.AdamW(fused=True)", "fused=True"},
    /* PR #63269 "[CUDA graphs] Prototype API and documentation" (mcarilli, 2021-08-14)
     * added torch/cuda/graphs.py with torch.cuda.graph and graph_pool_handle, before
     * 1.10's cut (1.10 release notes: CUDA Graphs APIs). */
    [OD_TORCH_CUDA_GRAPH] = {1, 10, "torch.cuda.graph", NULL},
    [OD_TORCH_GRAPH_POOL_HANDLE] = {1, 10, "torch.cuda.graph_pool_handle", NULL},
    /* torch.compile is the headline of 2.0 (2.0 release notes). */
    [OD_TORCH_COMPILE] = {2, 0, "torch.compile", "torch.compile"},
};

/* A release series as a version. */
static od_torch_version series(unsigned major, unsigned minor)
{
    od_torch_version v = {major, minor, 0, 0};
    return v;
}

static const od_torch_version unknown_version;

int od_torch_version_known(od_torch_version v)
{
    return v.major || v.minor || v.patch;
}

int od_torch_version_cmp(od_torch_version a, od_torch_version b)
{
    if (a.major != b.major)
        return a.major < b.major ? -1 : 1;
    if (a.minor != b.minor)
        return a.minor < b.minor ? -1 : 1;
    if (a.patch != b.patch)
        return a.patch < b.patch ? -1 : 1;
    if (a.nightly != b.nightly)
        return a.nightly ? -1 : 1;
    return 0;
}

/* Order of two release series (major.minor only). */
static int series_cmp(od_torch_version a, od_torch_version b)
{
    if (a.major != b.major)
        return a.major < b.major ? -1 : 1;
    if (a.minor != b.minor)
        return a.minor < b.minor ? -1 : 1;
    return 0;
}

/* Read up to 4 decimal digits at *p into *v; advances *p. 0 when there are none or more. */
static int read_number(const char **p, unsigned *v)
{
    const char *s = *p;
    unsigned n = 0;
    int digits = 0;
    while (*s >= '0' && *s <= '9') {
        if (++digits > 4)
            return 0;
        n = n * 10 + (unsigned)(*s - '0');
        s++;
    }
    if (!digits)
        return 0;
    *v = n;
    *p = s;
    return 1;
}

/* Skip a run of digits (a pre-release or dev number, which may be a date). */
static const char *skip_digits(const char *s)
{
    while (*s >= '0' && *s <= '9')
        s++;
    return s;
}

od_status od_torch_version_parse(const char *s, od_torch_version *out)
{
    od_torch_version v = {0, 0, 0, 0};
    if (!out)
        return OD_ERR_ARG;
    *out = unknown_version;
    if (!s)
        return OD_ERR_ARG;
    const char *p = s;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p == 'v' || *p == 'V')
        p++;
    if (!read_number(&p, &v.major) || *p != '.')
        return OD_ERR_ARG;
    p++;
    if (!read_number(&p, &v.minor))
        return OD_ERR_ARG;
    if (p[0] == '.' && p[1] >= '0' && p[1] <= '9') {
        p++;
        if (!read_number(&p, &v.patch))
            return OD_ERR_ARG;
    }
    /* PEP 440 suffixes torch uses: a0 (source builds), .devYYYYMMDD (nightlies), rcN. */
    if (p[0] == 'a' || p[0] == 'b') {
        v.nightly = 1;
        p = skip_digits(p + 1);
    } else if (p[0] == 'r' && p[1] == 'c') {
        p = skip_digits(p + 2);
    }
    if (strncmp(p, ".dev", 4) == 0 || strncmp(p, "dev", 3) == 0) {
        v.nightly = 1;
        p = skip_digits(p + (*p == '.' ? 4 : 3));
    } else if (strncmp(p, ".post", 5) == 0) {
        p = skip_digits(p + 5);
    }
    if (*p == '+') {
        /* A local label: +cu117, +rocm5.7, +git1b2c3d4, +cpu. */
        const char *l = ++p;
        while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
               *p == '.' || *p == '_' || *p == '-')
            p++;
        if (p == l)
            return OD_ERR_ARG;
    }
    while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
        p++;
    if (*p)
        return OD_ERR_ARG;
    *out = v;
    return OD_OK;
}

char *od_torch_version_format(od_torch_version v, char *buf, size_t size)
{
    if (!size)
        return buf;
    if (!od_torch_version_known(v))
        snprintf(buf, size, "unknown");
    else
        snprintf(buf, size, "%u.%u.%u%s", v.major, v.minor, v.patch, v.nightly ? " (dev build)" : "");
    return buf;
}

od_torch_version od_torch_since(od_torch_feature f)
{
    if ((unsigned)f >= OD_TORCH_N_FEATURES)
        return unknown_version;
    return series(features[f].major, features[f].minor);
}

int od_torch_has(od_torch_version v, od_torch_feature f)
{
    if ((unsigned)f >= OD_TORCH_N_FEATURES || !od_torch_version_known(v))
        return -1;
    int c = series_cmp(v, od_torch_since(f));
    if (c == 0 && v.nightly)
        return -1;
    return c >= 0;
}

int od_torch_range_has(const od_torch_range *r, od_torch_feature f)
{
    if (!r || (unsigned)f >= OD_TORCH_N_FEATURES)
        return -1;
    od_torch_version since = od_torch_since(f);
    if (od_torch_version_known(r->lower) && series_cmp(since, r->lower) <= 0)
        return 1;
    if (od_torch_version_known(r->upper) && series_cmp(since, r->upper) > 0)
        return 0;
    return -1;
}

/* A bound as a range names it: its series, or the whole version when it is more. */
static char *bound_format(od_torch_version v, char *buf, size_t size)
{
    if (v.patch || v.nightly)
        return od_torch_version_format(v, buf, size);
    snprintf(buf, size, "%u.%u", v.major, v.minor);
    return buf;
}

char *od_torch_range_format(const od_torch_range *r, char *buf, size_t size)
{
    char lo[32], hi[32];
    int has_lo = od_torch_version_known(r->lower), has_hi = od_torch_version_known(r->upper);
    if (has_lo)
        bound_format(r->lower, lo, sizeof lo);
    if (has_hi)
        bound_format(r->upper, hi, sizeof hi);
    if (has_lo && has_hi && strcmp(lo, hi) == 0)
        snprintf(buf, size, "%s", lo);
    else if (has_lo && has_hi)
        snprintf(buf, size, "%s to %s", lo, hi);
    else if (has_lo)
        snprintf(buf, size, "%s or newer", lo);
    else if (has_hi)
        snprintf(buf, size, "%s or older", hi);
    else
        snprintf(buf, size, "any");
    return buf;
}

int od_torch_missing_feature(const od_torch_range *r, const char *const *texts, size_t n, int *lacks)
{
    int best = -1, best_lacks = 0;
    for (size_t k = 0; k < OD_TORCH_N_FEATURES; k++) {
        int named = 0;
        for (size_t i = 0; i < n && !named && features[k].named; i++)
            named = texts[i] && strstr(texts[i], features[k].named) != NULL;
        if (!named)
            continue;
        od_torch_feature f = (od_torch_feature)k;
        int h = r ? od_torch_range_has(r, f) : -1;
        if (h == 1)
            continue;
        /* one no allowed release has wins over one some may have; then the newest */
        int l = h == 0;
        if (best < 0 || l > best_lacks ||
            (l == best_lacks && series_cmp(od_torch_since(f), od_torch_since((od_torch_feature)best)) > 0)) {
            best = (int)f;
            best_lacks = l;
        }
    }
    *lacks = best_lacks;
    return best;
}

const char *od_torch_feature_name(od_torch_feature f)
{
    if ((unsigned)f >= OD_TORCH_N_FEATURES)
        return NULL;
    return features[f].name;
}

/* ---------- OOM messages ---------- */

/* First occurrence of needle in [h, e), or NULL. */
static const char *find(const char *h, const char *e, const char *needle)
{
    size_t n = strlen(needle);
    for (; h && h < e && (size_t)(e - h) >= n; h++)
        if (*h == *needle && memcmp(h, needle, n) == 0)
            return h;
    return NULL;
}

static int has(const char *h, const char *e, const char *needle)
{
    return find(h, e, needle) != NULL;
}

/* The phrases that start a PyTorch OOM report. */
static const char *const anchors[] = {
    "CUDA out of memory",
    "HIP out of memory",
    "would exceed allowed memory. (out of memory)", /* backend:cudaMallocAsync */
    "cuda runtime error (2) : out of memory",       /* torch before 1.0 */
    "THCudaCheck FAIL",                             /* ... its THC check, on the line before */
};

int od_torch_phrase_at(const char *p, const char *end, const char *phrase)
{
    int broke = 0;
    for (const char *s = phrase; *s; s++) {
        if (*s == ' ' && !broke) {
            const char *q = p;
            while (q < end && *q != '\n' && ((unsigned char)*q < 0x20 || *q == ' '))
                q++;
            if (q < end && *q == '\n') {
                for (p = q + 1; p < end && (*p == ' ' || *p == '\t'); p++)
                    ;
                broke = 1;
                continue;
            }
        }
        if (p >= end || *p != *s)
            return 0;
        p++;
    }
    return 1;
}

int od_torch_message_starts(const char *p, const char *end)
{
    for (size_t i = 0; i < sizeof anchors / sizeof *anchors; i++)
        if (od_torch_phrase_at(p, end, anchors[i]))
            return 1;
    return 0;
}

/* The first anchor beginning in [p, e), perhaps broken across a line break (read up to
 * end), or NULL. */
static const char *first_anchor(const char *p, const char *e, const char *end)
{
    for (; p < e; p++)
        for (size_t i = 0; i < sizeof anchors / sizeof *anchors; i++)
            if (*p == anchors[i][0] && od_torch_phrase_at(p, end, anchors[i]))
                return p;
    return NULL;
}

/* The figures that end the wordings before 2.2's ALLOC_CONF hint, and the hints that may
 * follow them: 1.10-2.0's "... reserved in total by PyTorch) If reserved memory is >>
 * allocated memory try setting max_split_size_mb to avoid fragmentation.", 2.1's "... is
 * reserved by PyTorch but unallocated. If reserved but unallocated memory is large try
 * setting max_split_size_mb to avoid fragmentation." (2.2+ ends the second one with
 * PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True), 1.0-1.3's "... cached)" none. */
static const char *const last_figures[] = {"reserved in total by PyTorch)", "but unallocated", " cached)"};
static const char *const hint_starts[] = {
    "If reserved memory is >> allocated memory try setting max_split_size_mb",
    "If reserved but unallocated memory is large try setting",
};

/* Each wording has a last phrase; a hint begun after the figures ends with its own last
 * word, and a hint a logger pushed onto the next line still belongs to the message. */
int od_torch_message_complete(const char *p, const char *e, const char *next, const char *end)
{
    if (has(p, e, "ALLOC_CONF") || has(p, e, "Memory Management") || has(p, e, "system failure"))
        return 1;
    const char *f = NULL;
    size_t flen = 0;
    for (size_t i = 0; i < sizeof last_figures / sizeof *last_figures && !f; i++)
        if ((f = find(p, e, last_figures[i])))
            flen = strlen(last_figures[i]);
    if (!f)
        return 0;
    const char *h = f + flen;
    while (h < e && (*h == ' ' || *h == '\t' || *h == '.'))
        h++;
    if (h < e) /* "...PyTorch) If reserved memory is >> allocated memory try": goes on */
        return has(h, e, "fragmentation");
    /* the next line goes on with a hint only when it is the hint's beginning (or all of
     * it): another line that starts with "If" is not */
    while (next < end && (*next == ' ' || *next == '\t'))
        next++;
    const char *le = memchr(next, '\n', (size_t)(end - next));
    size_t k = (size_t)((le ? le : end) - next);
    while (k && (next[k - 1] == ' ' || next[k - 1] == '\t' || next[k - 1] == '\r'))
        k--;
    for (size_t i = 0; i < sizeof hint_starts / sizeof *hint_starts; i++) {
        size_t n = strlen(hint_starts[i]);
        if (k >= 2 && memcmp(next, hint_starts[i], k < n ? k : n) == 0)
            return 0;
    }
    return 1;
}

#define WINDOW 4096
#define MAX_JOINED_LINES (OD_TORCH_MESSAGE_LINES - 1)

/* Copy [p, e) to buf+*n with every whitespace run as one space; stops when full. */
static void append_collapsed(char *buf, size_t *n, const char *p, const char *e)
{
    assert(*n < WINDOW);
    for (; p < e && *n + 1 < WINDOW; p++) {
        if (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') {
            if (*n && buf[*n - 1] != ' ')
                buf[(*n)++] = ' ';
        } else {
            buf[(*n)++] = *p;
        }
    }
    buf[*n] = 0;
}

/* Append one space to buf+*n unless it is empty or already ends with one. */
static void append_space(char *buf, size_t *n)
{
    if (*n && *n + 1 < WINDOW && buf[*n - 1] != ' ') {
        buf[(*n)++] = ' ';
        buf[*n] = 0;
    }
}

/* Join the report that starts on the line holding anchor a into buf (whitespace
 * collapsed), following up to MAX_JOINED_LINES wrapped lines; returns its length. The
 * report ends early at the next anchor. */
static size_t join_report(const char *text, const char *end, const char *a, char *buf)
{
    assert(text <= a && a < end);
    const char *ls = a;
    while (ls > text && ls[-1] != '\n' && a - ls < 512)
        ls--;
    size_t n = 0;
    buf[0] = 0;
    const char *p = ls;
    for (int k = 0; p < end && k <= MAX_JOINED_LINES; k++) {
        const char *le = memchr(p, '\n', (size_t)(end - p));
        if (!le)
            le = end;
        if (k > 0) {
            const char *next_anchor = first_anchor(p, le, end);
            append_space(buf, &n); /* the line break */
            if (next_anchor) {
                append_collapsed(buf, &n, p, next_anchor);
                break;
            }
        }
        append_collapsed(buf, &n, p, le);
        const char *next = le < end ? le + 1 : end;
        if (od_torch_message_complete(buf, buf + n, next, end))
            break;
        p = next;
    }
    return n;
}

static void set_range(od_torch_range *r, od_torch_version lo, od_torch_version hi, const char *why)
{
    r->lower = lo;
    r->upper = hi;
    r->why = why;
    r->refined = NULL;
}

/* The wording family of the joined report w[0..n). Returns 0 when none matches. */
static int classify_wording(const char *w, size_t n, od_torch_range *r)
{
    const char *e = w + n;
    const od_torch_version none = unknown_version;
    if (has(w, e, "would exceed allowed memory. (out of memory)")) {
        set_range(r, series(2, 0), none,
                  "the message of the backend:cudaMallocAsync allocator (\"would exceed allowed memory\"), "
                  "which 2.0 added");
        return 1;
    }
    if (has(w, e, "cuda runtime error (2) : out of memory") || has(w, e, "error=2 : out of memory")) {
        set_range(r, none, series(0, 4),
                  "the THC allocator's \"cuda runtime error (2) : out of memory\" of releases before 1.0");
        return 1;
    }
    if (has(w, e, "total capacty of")) {
        set_range(r, series(2, 1), series(2, 1),
                  "the 2.1 wording: \"GPU N has a total capacty of ...\", a typo 2.2 fixed");
        return 1;
    }
    if (has(w, e, "total capacity of ")) {
        if (has(w, e, "PYTORCH_ALLOC_CONF=expandable_segments"))
            set_range(r, series(2, 8), none,
                      "the 2.2+ wording whose hint names PYTORCH_ALLOC_CONF, the variable's unified "
                      "name (2.8+)");
        else if (has(w, e, "ALLOC_CONF=expandable_segments"))
            set_range(r, series(2, 2), none,
                      "the 2.2+ wording: \"GPU N has a total capacity of ...\" with the "
                      "expandable_segments:True hint");
        else if (has(w, e, "try setting max_split_size_mb"))
            set_range(r, series(2, 1), series(2, 2),
                      "the 2.1 wording (\"GPU N has a total capacity of ...\") with its "
                      "max_split_size_mb hint and the typo fixed, as builds between 2.1 and 2.2 print it");
        else
            set_range(r, series(2, 1), none,
                      "the 2.1+ wording (\"GPU N has a total capacity of ...\"); the hint that "
                      "would date it further is missing");
        return 1;
    }
    if (has(w, e, " total capacity; ")) {
        int allowed = has(w, e, " allowed; ");
        if (has(w, e, "max_split_size_mb"))
            set_range(r, series(1, 10), series(2, 0),
                      "the 1.10-2.0 wording: \"(GPU N; ... reserved in total by PyTorch)\" with the "
                      "max_split_size_mb hint");
        else if (has(w, e, "reserved in total by PyTorch)"))
            set_range(r, series(1, allowed ? 8 : 4), series(1, 9),
                      allowed ? "the 1.8-1.9 wording: \"(GPU N; ... N allowed; ... reserved in total by "
                                "PyTorch)\" (the allowed figure is 1.8's) with no max_split_size_mb hint"
                              : "the 1.4-1.9 wording: \"(GPU N; ... reserved in total by PyTorch)\" with "
                                "no max_split_size_mb hint after it");
        else if (has(w, e, " cached)"))
            set_range(r, series(1, 0), series(1, 3),
                      "the 1.0-1.3 wording: \"(GPU N; ... free; ... cached)\"");
        else
            set_range(r, series(1, allowed ? 8 : 0), series(2, 0),
                      "the 1.x-2.0 wording (\"(GPU N; ... total capacity; ...\"), cut before the part "
                      "that dates it further");
        return 1;
    }
    /* A report cut right after its request: "Tried to allocate 2.00 GiB. GPU" is 2.1+,
     * "Tried to allocate 2.00 GiB (GPU" is older. */
    const char *t = find(w, e, "Tried to allocate ");
    if (t) {
        const char *q = t + strlen("Tried to allocate ");
        const char *lim = q + 32 < e ? q + 32 : e;
        const char *dot = find(q, lim, ". GPU");
        const char *paren = find(q, lim, " (GPU");
        if (dot && (!paren || dot < paren)) {
            set_range(r, series(2, 1), none,
                      "the 2.1+ wording (\"Tried to allocate X. GPU N ...\"), cut before its figures");
            return 1;
        }
        if (paren) {
            set_range(r, series(1, 0), series(2, 0),
                      "the 1.x-2.0 wording (\"Tried to allocate X (GPU N; ...\"), cut before its figures");
            return 1;
        }
    }
    return 0;
}

/* The exception's name printed before the report, as a range: torch.cuda.OutOfMemoryError
 * came with PR #83146 "Propagate CUDAOutOfMemoryError to Python" (zdevito, 2022-08-10,
 * 1.13); PR #121702 "Support Accelerator OOM Error" (merged 2024-04-15) renamed it
 * torch.OutOfMemoryError (huggingface/accelerate #3475 says "from PyTorch 2.5.0"; the
 * earlier candidate, 2.4, is the bound). Before 1.13 the report was a RuntimeError.
 * Returns 0 when no name is recognized. */
static int classify_exception(const char *w, const char *anchor, od_torch_range *r)
{
    const char *last = NULL;
    for (const char *p = w; (p = find(p, anchor, "Error: ")) != NULL; p++)
        last = p;
    if (!last)
        return 0;
    const char *s = last;
    while (s > w && ((s[-1] >= 'a' && s[-1] <= 'z') || (s[-1] >= 'A' && s[-1] <= 'Z') ||
                     (s[-1] >= '0' && s[-1] <= '9') || s[-1] == '.' || s[-1] == '_'))
        s--;
    size_t n = (size_t)(last - s) + strlen("Error");
    const od_torch_version none = unknown_version;
#define NAME_IS(lit) (n == strlen(lit) && memcmp(s, lit, n) == 0)
    if (NAME_IS("torch.OutOfMemoryError"))
        set_range(r, series(2, 4), none, "the exception is torch.OutOfMemoryError, its name from 2.4");
    else if (NAME_IS("torch.cuda.OutOfMemoryError") || NAME_IS("OutOfMemoryError"))
        set_range(r, series(1, 13), none, "the exception is OutOfMemoryError, which 1.13 introduced");
    else if (NAME_IS("RuntimeError"))
        set_range(r, none, series(1, 12), "the exception is a plain RuntimeError, as before 1.13");
    else
        return 0;
#undef NAME_IS
    return 1;
}

/* Narrow r by c when they overlap; returns 1 when r changed, 0 when it did not, -1 when
 * they contradict (r is left as it was). */
static int narrow(od_torch_range *r, const od_torch_range *c)
{
    od_torch_version lo = r->lower, hi = r->upper;
    if (od_torch_version_known(c->lower) && (!od_torch_version_known(lo) || series_cmp(c->lower, lo) > 0))
        lo = c->lower;
    if (od_torch_version_known(c->upper) && (!od_torch_version_known(hi) || series_cmp(c->upper, hi) < 0))
        hi = c->upper;
    if (od_torch_version_known(lo) && od_torch_version_known(hi) && series_cmp(lo, hi) > 0)
        return -1;
    int changed = series_cmp(lo, r->lower) != 0 || series_cmp(hi, r->upper) != 0;
    r->lower = lo;
    r->upper = hi;
    return changed;
}

int od_torch_infer_message(const char *text, size_t len, od_torch_range *out)
{
    if (!out)
        return 0;
    set_range(out, unknown_version, unknown_version, "no PyTorch CUDA/HIP out-of-memory message");
    if (!text || !len)
        return 0;
    const char *end = text + len;
    const char *a = first_anchor(text, end, end);
    if (!a)
        return 0;
    char w[WINDOW];
    size_t n = join_report(text, end, a, w);
    od_torch_range r;
    if (!classify_wording(w, n, &r)) {
        out->why = "a PyTorch out-of-memory message without the wording that dates it";
        return 0;
    }
    const char *wa = first_anchor(w, w + n, w + n);
    od_torch_range c;
    if (wa && classify_exception(w, wa, &c)) {
        int k = narrow(&r, &c);
        if (k > 0)
            r.refined = c.why;
        else if (k < 0)
            r.refined = "the exception's name disagrees with the wording and was not used";
    }
    *out = r;
    return 1;
}

/* ---------- snapshots ---------- */

od_torch_version od_torch_snapshot_since(const od_torch_snapshot_keys *k, const char **why)
{
    /* Lower bounds, so the earlier candidate wherever unsure. */
    struct {
        int present;
        unsigned major, minor;
        const char *why;
    } rows[] = {
        /* PR #27361 (1.4): memory_snapshot() returns "a complete dump of the allocator
         * block/segment state as a list of segments"; PR #82146 (Aug 2022, 1.13) gave
         * blocks a "history" of {addr, real_size, frames}. */
        {k && k->block_history, 1, 13, "blocks carry \"history\" with frames (1.13+)"},
        /* PR #86241 "Caching allocator tracing" (2022-10-04, after 1.13's cut) made
         * _snapshot() a dict {"segments", "device_traces"}. */
        {k && k->dict_layout, 2, 0, "the snapshot is a dict with \"segments\" (2.0+)"},
        {k && k->device_traces, 2, 0, "the snapshot has \"device_traces\" (2.0+)"},
        /* segments' owner_private_pool_id came with torch.compile's CUDA graph trees
         * around 2.0 (2.0 or 2.1: unsure, so 2.0). */
        {k && k->segment_pool_id, 2, 0, "segments carry \"segment_pool_id\" (2.0+)"},
        /* PR #96995 "Expandable blocks in allocator" (Apr 2023) added
         * segment_info.is_expandable with the setting. */
        {k && k->is_expandable, 2, 1, "segments carry \"is_expandable\" (2.1+)"},
        /* PR #119404 "[Memory Snapshot] Add CUDAAllocatorConfig details into snapshot
         * metadata" (aaronenyeshi, 2024-02-07, after 2.2's release). */
        {k && k->allocator_settings, 2, 3, "the snapshot has \"allocator_settings\" (2.3+)"},
        /* PR #129072 "[Memory Snapshot] Add recordAnnotations to capture record_function
         * annotations" (merged 2024-06-19; its first landing, #124179, was reverted): 2.5
         * unless it made 2.4's June cut, so 2.4. */
        {k && k->external_annotations, 2, 4, "the snapshot has \"external_annotations\" (2.4+)"},
        /* PR #152707 "[Memento] Add PT2 to Memory Snapshot" (sraikund16, 2025-05-02,
         * after 2.7's cut): trace entries' "compile_context". */
        {k && k->compile_context, 2, 8, "trace entries carry \"compile_context\" (2.8+)"},
        /* PR #165490 "[Mem Snapshot] Add Metadata Field" (sraikund16, 2025-10-14, after
         * 2.9's cut): trace entries' "user_metadata", set by _set_memory_metadata. */
        {k && k->user_metadata, 2, 10, "trace entries carry \"user_metadata\" (2.10+)"},
    };
    od_torch_version best = unknown_version;
    const char *best_why = "no key that dates the snapshot";
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        if (!rows[i].present)
            continue;
        od_torch_version v = series(rows[i].major, rows[i].minor);
        if (!od_torch_version_known(best) || series_cmp(v, best) > 0) {
            best = v;
            best_why = rows[i].why;
        }
    }
    if (why)
        *why = best_why;
    return best;
}
