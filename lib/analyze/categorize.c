/* categorize.c - live memory at the peak by purpose, from each allocation's frames. */
#include "analyze/categorize.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/u64map.h"
#include "model/gpus.h"
#include "model/sites.h"

const char *od_category_name(od_category c)
{
    static const char *const n[OD_CAT_COUNT] = {
        "parameters", "gradients", "optimizer_states", "activations", "logits_and_loss",
        "kv_cache", "temporaries", "workspace", "retained_graphs", "unknown",
    };
    return c < OD_CAT_COUNT ? n[c] : "?";
}

static int contains_ci(const char *s, const char *needle)
{
    size_t n = strlen(needle);
    for (; s && *s; s++) {
        size_t i = 0;
        while (i < n && s[i] && tolower((unsigned char)s[i]) == needle[i])
            i++;
        if (i == n)
            return 1;
    }
    return 0;
}

od_category od_categorize_stack(const od_snapshot *s, uint32_t stack)
{
    uint32_t n;
    const uint32_t *fr = od_snapshot_stack(s, stack, &n);
    if (n == 0)
        return OD_CAT_GRADIENTS; /* the autograd engine's thread has no Python frames */
    /* Frames inside torch.optim: state creation, or the step's intermediates. */
    int optim = 0;
    for (uint32_t i = 0; i < n; i++) {
        const od_frame *f = &s->frames[fr[i]];
        if (f->filename && (strstr(f->filename, "/torch/optim/") || strstr(f->filename, "\\torch\\optim\\"))) {
            optim = 1;
            if (f->name && (strcmp(f->name, "_init_group") == 0 || contains_ci(f->name, "init_state") ||
                            contains_ci(f->name, "_init_")))
                return OD_CAT_OPTIMIZER_STATES;
        }
    }
    if (optim)
        return OD_CAT_TEMPORARIES;
    /* The prefix: frames inside the innermost module forward outside torch. Names outside
     * it (a user's compute_loss() around the model call) say nothing about this tensor. */
    uint32_t prefix = n;
    int forwards = 0, torch_forward = 0, user_forward = 0;
    for (uint32_t i = 0; i < n; i++) {
        const od_frame *f = &s->frames[fr[i]];
        od_frame_kind k = od_frame_classify(f->filename);
        if (f->name && strcmp(f->name, "forward") == 0) {
            if (k == OD_FRAME_USER || k == OD_FRAME_PACKAGE) {
                if (prefix == n)
                    prefix = i;
                forwards++;
                if (k == OD_FRAME_USER && forwards == 1)
                    user_forward = 1;
            } else if (k == OD_FRAME_TORCH) {
                torch_forward = 1;
            }
        }
    }
    int user_frame = 0, module_level = 0, init = forwards == 0 && od_stack_is_init(s, stack);
    for (uint32_t i = 0; i < prefix; i++) {
        const od_frame *f = &s->frames[fr[i]];
        const char *fn = f->filename ? f->filename : "";
        od_frame_kind k = od_frame_classify(fn);
        if (strstr(fn, "cache_utils") || contains_ci(f->name, "cache"))
            return OD_CAT_KV_CACHE;
        if (strstr(fn, "/torch/distributed/") || contains_ci(fn, "nccl") || contains_ci(f->name, "workspace"))
            return OD_CAT_WORKSPACE;
        if (strstr(fn, "/torch/autograd/") && f->name && strcmp(f->name, "_make_grads") == 0)
            return OD_CAT_LOGITS_AND_LOSS; /* the loss's own gradient (ones) */
        if (strstr(fn, "/torch/autograd/") && f->name && (strcmp(f->name, "backward") == 0 || strcmp(f->name, "grad") == 0))
            return OD_CAT_GRADIENTS;
        if (contains_ci(f->name, "loss") || contains_ci(f->name, "cross_entropy") || contains_ci(f->name, "nll") ||
            (k != OD_FRAME_USER && contains_ci(fn, "loss")))
            return OD_CAT_LOGITS_AND_LOSS;
        if (f->name && strcmp(f->name, "<module>") == 0 && !user_frame)
            module_level = 1;
        if (k == OD_FRAME_USER)
            user_frame = 1;
    }
    if (forwards >= 2 || (forwards == 1 && user_forward))
        return OD_CAT_ACTIVATIONS;
    if (forwards == 1)
        return OD_CAT_LOGITS_AND_LOSS; /* made by the outermost model's own forward: lm_head */
    if (init)
        return OD_CAT_PARAMETERS;
    if (torch_forward)
        return OD_CAT_ACTIVATIONS; /* a torch module called from user code */
    if (module_level)
        return OD_CAT_UNKNOWN;     /* import-time buffers of some library */
    if (user_frame)
        return OD_CAT_TEMPORARIES;
    return OD_CAT_UNKNOWN;
}

/* Whether a stack's innermost frames can be the first matmul, as when cuBLAS's first call
 * on a handle allocates its workspace: 2 for a matmul or linear by name (or no frames), 1
 * for a module's forward (an `@` is a Python line there, as in Llama's rotary embedding,
 * snap_infer_llama's first matmul), 0 otherwise. */
static int matmul_frames(const od_snapshot *s, uint32_t stack)
{
    uint32_t n;
    const uint32_t *fr = od_snapshot_stack(s, stack, &n);
    for (uint32_t i = 0; i < n && i < 3; i++) {
        const od_frame *f = &s->frames[fr[i]];
        const char *fn = f->filename ? f->filename : "";
        if (strstr(fn, "pytorch_utils") || strstr(fn, "/torch/nn/modules/linear") ||
            (f->name && (strstr(f->name, "matmul") || strstr(f->name, "linear") || strstr(f->name, "addmm"))))
            return 2;
    }
    if (n && s->frames[fr[0]].name && !strcmp(s->frames[fr[0]].name, "forward"))
        return 1;
    return n == 0 ? 2 : 0;
}

const char *od_category_basis(od_category c)
{
    static const char *const b[OD_CAT_COUNT] = {
        "frames (module __init__, .to(), from_pretrained, load_state_dict); inferred for weights live before the "
        "trace and through its end",
        "made by backward without frames, sized like a parameter, and alive until the next iteration boundary",
        "frames (torch.optim state initialization)",
        "frames (inside a nested module forward)",
        "frames (loss functions, the outermost forward's output), and backward blocks sized like the logits",
        "frames (transformers cache_utils, *cache*)",
        "frames (optimizer step, user code), and other backward intermediates",
        "never freed, a cuBLAS workspace size, made by the first matmul (or by the autograd engine); "
        "torch.distributed / NCCL frames",
        "made in an iteration at a site whose allocations outlive their iterations and are still held at the "
        "end (a graph kept alive: an eval forward without no_grad, a loss kept without .item())",
        "no frames and no lifetime rule applies (often: allocated before the trace began)",
    };
    return c < OD_CAT_COUNT ? b[c] : "?";
}

typedef struct {
    od_category cat;
    const char *site;
    uint64_t bytes;
} catsite;

static int cmp_catsite(const void *pa, const void *pb)
{
    const catsite *a = pa, *b = pb;
    if (a->cat != b->cat)
        return a->cat < b->cat ? -1 : 1;
    return strcmp(a->site, b->site);
}

/* The stacks and the module paths holding the most bytes (per-stack tallies given). */
/* Tallies are per (stack, category): slot stack * OD_CAT_COUNT + category. */
static int top_stacks_and_modules(const od_snapshot *s, od_categories *c, const uint64_t *sbytes,
                                  const uint64_t *scount)
{
    size_t n = s->n_stacks ? s->n_stacks : 1, slots = (size_t)s->n_stacks * OD_CAT_COUNT;
    uint8_t *taken = calloc(slots ? slots : 1, 1);
    od_named_bytes *rows = malloc(n * sizeof *rows);
    if (!taken || !rows) {
        free(taken);
        free(rows);
        return 0;
    }
    while (c->n_top_stacks < OD_TOP_STACKS) {
        size_t best = SIZE_MAX;
        for (size_t k = 0; k < slots; k++)
            if (!taken[k] && sbytes[k] && (best == SIZE_MAX || sbytes[k] > sbytes[best]))
                best = k;
        if (best == SIZE_MAX)
            break;
        taken[best] = 1;
        size_t i = c->n_top_stacks++;
        c->top_stacks[i].stack = (uint32_t)(best / OD_CAT_COUNT);
        c->top_stacks[i].category = (od_category)(best % OD_CAT_COUNT);
        c->top_stacks[i].bytes = sbytes[best];
        c->top_stacks[i].count = scount[best];
    }
    size_t m = 0;
    for (size_t k = 1; k < s->n_stacks; k++) {
        uint64_t b = 0;
        for (int cat = 0; cat < OD_CAT_COUNT; cat++)
            b += sbytes[k * OD_CAT_COUNT + (size_t)cat];
        if (!b)
            continue;
        od_stack_module_path(s, (uint32_t)k, rows[m].name, sizeof rows[m].name);
        if (!rows[m].name[0])
            continue;
        rows[m++].bytes = b;
    }
    c->n_top_modules = od_named_bytes_top(rows, m, OD_TOP_STACKS);
    for (size_t i = 0; i < c->n_top_modules; i++) {
        snprintf(c->top_modules[i].path, sizeof c->top_modules[i].path, "%s", rows[i].name);
        c->top_modules[i].bytes = rows[i].bytes;
    }
    free(taken);
    free(rows);
    return 1;
}

/* The first boundary after entry i, or SIZE_MAX. */
static size_t next_boundary(const od_trace *t, size_t i)
{
    size_t lo = 0, hi = t->n_boundaries;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (t->boundaries[mid] <= i)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < t->n_boundaries ? t->boundaries[lo] : SIZE_MAX;
}

/* *forward_ws counts the workspaces taken from a module forward's frames alone: only the
 * first such block is one (a thread's first matmul comes once; a 32 MiB tensor a forward
 * keeps each step is not a workspace). */
static od_category lifetime_category(const od_trace *t, const od_lifetime *l, od_category by_frames,
                                     size_t weights_until, int *forward_ws)
{
    od_life_origin o = od_life_of(t, l);
    if (l->free_index == OD_TRACE_NEVER && od_cublas_workspace_size(o.requested_bytes) && by_frames != OD_CAT_PARAMETERS &&
        by_frames != OD_CAT_OPTIMIZER_STATES && by_frames != OD_CAT_KV_CACHE) {
        /* a block live before a wrapped trace began counts only with its frames to show it */
        int m = o.stack == 0 ? (l->alloc_index != OD_TRACE_BEFORE ? 2 : 0) : matmul_frames(t->snap, o.stack);
        if (m == 2 || (m == 1 && (*forward_ws)++ == 0))
            return OD_CAT_WORKSPACE;
    }
    if (weights_until != SIZE_MAX && l->alloc_index == OD_TRACE_BEFORE &&
        (by_frames == OD_CAT_GRADIENTS || by_frames == OD_CAT_UNKNOWN) &&
        (l->free_index == OD_TRACE_NEVER || l->free_index >= weights_until))
        return OD_CAT_PARAMETERS;
    return by_frames;
}

/* Whether a stack's site (sites.h) is one of the iterations' survivors still held at the
 * end: allocations made there and kept past their iteration are a retained graph's. The
 * answer per stack is cached in seen (0 not asked, 1 yes, 2 no). */
static int survivor_stack(const od_snapshot *s, const od_iterations *it, uint32_t stack, uint8_t *seen)
{
    if (!it || !it->n_survivors || !stack)
        return 0;
    if (!seen[stack]) {
        char site[512];
        int64_t sf, wf;
        od_stack_site(s, stack, &sf, &wf);
        od_frame_format(s, sf, site, sizeof site);
        seen[stack] = 2;
        for (size_t k = 0; k < it->n_survivors; k++)
            if (it->survivors[k].judged_held_bytes && it->survivors[k].bytes_per_iteration &&
                strcmp(it->survivors[k].site, site) == 0)
                seen[stack] = 1;
    }
    return seen[stack] == 1;
}

/* Every lifetime's category (cats[i] for t->lives[i]), and the tallies of those live at
 * `at` into c. One pass for both, so the page's colour of an allocation and the figures
 * at the peak come from the same rules: frames first (od_categorize_stack), refined by
 * lifetime and size (lifetime_category); a block made by backward without frames is a
 * gradient when sized like a parameter and alive until the next boundary (at the peak,
 * each parameter matches one), else logits_and_loss when sized like the logits, else a
 * temporary; a block made in an iteration at a survivor's site and kept past the next
 * boundary is a retained graph's (an eval forward without no_grad, a loss kept without
 * .item()). */
static od_status categorize_all(const od_trace *t, size_t weights_until, const od_iterations *it, od_categories *c,
                                uint8_t *cats)
{
    const od_snapshot *s = t->snap;
    od_category *frame_cat = calloc(s->n_stacks + 1, sizeof *frame_cat);
    uint8_t *cat_known = calloc(s->n_stacks + 1, 1), *surv = calloc(s->n_stacks + 1, 1);
    size_t slots = ((size_t)s->n_stacks + 1) * OD_CAT_COUNT; /* per (stack, category) */
    uint64_t *sbytes = calloc(slots, sizeof *sbytes), *scount = calloc(slots, sizeof *scount);
    od_u64map params = {0}, logits = {0}; /* requested size -> count / 1 */
    catsite *cs = NULL;
    char **names = NULL;
    size_t n_cs = 0, cap_names = 0, cap_cs = 0;
    od_status rc = OD_ERR_NOMEM;
    if (!frame_cat || !cat_known || !surv || !sbytes || !scount)
        goto out;
    size_t at = t->has_trace && t->has_peak ? t->peak_index : t->has_trace ? SIZE_MAX : (size_t)UINT32_MAX - 1;
#define FRAME_CAT(st_) (cat_known[st_] ? frame_cat[st_] \
                        : (cat_known[st_] = 1, frame_cat[st_] = (st_) ? od_categorize_stack(s, (st_)) : OD_CAT_GRADIENTS))
    /* Parameter sizes (from frames, or weights inferred) and logits sizes, for matching
     * what backward makes without frames. */
    for (size_t i = 0; i < t->n_lives; i++) {
        const od_lifetime *l = &t->lives[i];
        od_life_origin o = od_life_of(t, l);
        uint32_t st = o.stack; /* in range: the loader asserts it */
        od_category fc = FRAME_CAT(st);
        uint32_t k;
        int weight = l->alloc_index == OD_TRACE_BEFORE && l->free_index == OD_TRACE_NEVER && st == 0;
        if (fc == OD_CAT_PARAMETERS || weight) {
            uint32_t cnt = od_u64map_get(&params, o.requested_bytes, &k) ? k + 1 : 1;
            if (!od_u64map_put(&params, o.requested_bytes, cnt))
                goto out;
        } else if (fc == OD_CAT_LOGITS_AND_LOSS && o.requested_bytes >= (1u << 20)) {
            if (!od_u64map_put(&logits, o.requested_bytes, 1))
                goto out;
        }
    }
    char buf[512];
    int forward_ws = 0;
    for (size_t i = 0; i < t->n_lives; i++) {
        const od_lifetime *l = &t->lives[i];
        int live = at == (size_t)UINT32_MAX - 1 ? l->free_index == OD_TRACE_NEVER : od_trace_live_after(l, at);
        od_life_origin o = od_life_of(t, l);
        uint32_t st = o.stack; /* in range: the loader asserts it */
        od_category cat = lifetime_category(t, l, FRAME_CAT(st), weights_until, &forward_ws);
        if (cat == OD_CAT_GRADIENTS && l->alloc_index == OD_TRACE_BEFORE)
            cat = OD_CAT_UNKNOWN; /* no frames and no lifetime to judge */
        if (cat == OD_CAT_GRADIENTS) {
            uint32_t k;
            size_t nb = t->n_boundaries ? next_boundary(t, l->alloc_index) : SIZE_MAX;
            int survives = nb == SIZE_MAX ? 1 : l->free_index == OD_TRACE_NEVER || l->free_index >= nb;
            int sized = od_u64map_get(&params, o.requested_bytes, &k) && k > 0;
            if (survives && sized) {
                if (live) /* at the peak each parameter matches one gradient */
                    od_u64map_put(&params, o.requested_bytes, k - 1); /* replaces: cannot fail */
            } else if (od_u64map_get(&logits, o.requested_bytes, &k)) {
                cat = OD_CAT_LOGITS_AND_LOSS;
            } else {
                cat = OD_CAT_TEMPORARIES;
            }
        }
        if ((cat == OD_CAT_ACTIVATIONS || cat == OD_CAT_LOGITS_AND_LOSS || cat == OD_CAT_TEMPORARIES) && it &&
            it->n >= 2 && l->alloc_index != OD_TRACE_BEFORE) {
            size_t nb = next_boundary(t, l->alloc_index);
            if (nb != SIZE_MAX && od_trace_live_after(l, nb) && survivor_stack(s, it, st, surv))
                cat = OD_CAT_RETAINED_GRAPHS;
        }
        if (cats)
            cats[i] = (uint8_t)cat;
        if (!live)
            continue;
        c->bytes[cat] += l->block_bytes;
        c->count[cat]++;
        c->total_bytes += l->block_bytes;
        sbytes[(size_t)st * OD_CAT_COUNT + cat] += l->block_bytes;
        scount[(size_t)st * OD_CAT_COUNT + cat]++;
        if (!od_grow((void **)&names, &cap_names, n_cs + 1, sizeof *names) ||
            !od_grow((void **)&cs, &cap_cs, n_cs + 1, sizeof *cs))
            goto out;
        if (st == 0) {
            snprintf(buf, sizeof buf, "%s", l->alloc_index == OD_TRACE_BEFORE && t->has_trace ? OD_SITE_BEFORE_TRACE
                                                                                               : OD_SITE_NO_FRAMES);
        } else {
            int64_t sf, wf;
            od_stack_site(s, st, &sf, &wf);
            od_frame_format(s, sf, buf, sizeof buf);
        }
        names[n_cs] = strdup(buf);
        if (!names[n_cs])
            goto out;
        cs[n_cs] = (catsite){cat, names[n_cs], l->block_bytes};
        n_cs++;
    }
#undef FRAME_CAT
    od_sort(cs, n_cs, sizeof *cs, cmp_catsite);
    for (size_t i = 0; i < n_cs;) {
        size_t j = i;
        uint64_t sum = 0;
        while (j < n_cs && cs[j].cat == cs[i].cat && strcmp(cs[j].site, cs[i].site) == 0)
            sum += cs[j++].bytes;
        if (sum > c->top_site_bytes[cs[i].cat]) {
            c->top_site_bytes[cs[i].cat] = sum;
            snprintf(c->top_site[cs[i].cat], sizeof c->top_site[0], "%s", cs[i].site);
        }
        i = j;
    }
    if (!top_stacks_and_modules(s, c, sbytes, scount))
        goto out;
    rc = OD_OK;
out:
    free(sbytes);
    free(scount);
    for (size_t i = 0; names && i < n_cs; i++)
        free(names[i]);
    free(names);
    free(cs);
    free(frame_cat);
    free(cat_known);
    free(surv);
    od_u64map_free(&params);
    od_u64map_free(&logits);
    return rc;
}

od_status od_categorize_with(const od_trace *t, size_t weights_until, const od_iterations *it, od_categories **out,
                             uint8_t **life_categories, od_error *err)
{
    *out = NULL;
    if (life_categories)
        *life_categories = NULL;
    od_categories *c = calloc(1, sizeof *c);
    uint8_t *cats = life_categories ? malloc(t->n_lives ? t->n_lives : 1) : NULL;
    if (!c || (life_categories && !cats)) {
        free(c);
        free(cats);
        return od_fail(err, OD_ERR_NOMEM, "out of memory");
    }
    c->device = t->device;
    c->have_peak = t->has_trace && t->n_entries;
    c->peak_entry = t->peak_index;
    c->peak_time_us = t->peak_time_us;
    od_status rc = categorize_all(t, weights_until, it, c, cats);
    if (rc != OD_OK) {
        free(c);
        free(cats);
        return od_fail(err, rc, "out of memory");
    }
    *out = c;
    if (life_categories)
        *life_categories = cats;
    return OD_OK;
}

od_status od_categorize(const od_trace *t, size_t weights_until, od_categories **out, od_error *err)
{
    return od_categorize_with(t, weights_until, NULL, out, NULL, err);
}

void od_categories_free(od_categories *c)
{
    free(c);
}
