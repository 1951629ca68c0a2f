/* categorize.c - live memory at the peak by purpose, from each allocation's frames. */
#include "categorize.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "iterations.h"
#include "sites.h"
#include "summary.h"
#include "u64map.h"

const char *od_category_name(od_category c)
{
    static const char *const n[OD_CAT_COUNT] = {
        "parameters", "gradients", "optimizer_states", "activations", "logits_and_loss",
        "kv_cache", "temporaries", "workspace", "unknown",
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

static int name_is(const char *name, const char *const *list)
{
    for (; *list; list++)
        if (name && strcmp(name, *list) == 0)
            return 1;
    return 0;
}

od_category od_categorize_stack(const od_snapshot *s, uint32_t stack)
{
    static const char *const init_names[] = {
        "__init__", "_apply", "to", "cuda", "from_pretrained", "from_config", "_from_config",
        "load_state_dict", "_load_from_state_dict", "reset_parameters", "init_weights",
        "_init_weights", "post_init", "initialize_weights", "to_empty", "materialize", NULL,
    };
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
    int user_frame = 0, module_level = 0, init = 0;
    for (uint32_t i = 0; i < prefix; i++) {
        const od_frame *f = &s->frames[fr[i]];
        const char *fn = f->filename ? f->filename : "";
        od_frame_kind k = od_frame_classify(fn);
        if (strstr(fn, "cache_utils") || contains_ci(f->name, "cache"))
            return OD_CAT_KV_CACHE;
        if (strstr(fn, "/torch/distributed/") || contains_ci(fn, "nccl") || contains_ci(f->name, "workspace"))
            return OD_CAT_WORKSPACE;
        if (strstr(fn, "/torch/autograd/") && f->name &&
            (strcmp(f->name, "_make_grads") == 0 || strcmp(f->name, "backward") == 0 || strcmp(f->name, "grad") == 0))
            return OD_CAT_GRADIENTS;
        if (contains_ci(f->name, "loss") || contains_ci(f->name, "cross_entropy") || contains_ci(f->name, "nll") ||
            (k != OD_FRAME_USER && contains_ci(fn, "loss")))
            return OD_CAT_LOGITS_AND_LOSS;
        if (name_is(f->name, init_names))
            init = 1;
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

/* Per-stack tallies, then grouped by (category, site) for the top sites. */
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

static int is_live(const od_block *b)
{
    return b->state == OD_BLOCK_ACTIVE_ALLOCATED || b->state == OD_BLOCK_ACTIVE_PENDING_FREE;
}

od_status od_categorize(const od_snapshot *s, int64_t device, od_categories **out, od_error *err)
{
    *out = NULL;
    od_categories *c = calloc(1, sizeof *c);
    uint64_t *bytes = calloc(s->n_stacks + 1, sizeof *bytes); /* slot n_stacks: before the trace */
    uint64_t *count = calloc(s->n_stacks + 1, sizeof *count);
    od_u64map live = {0};
    uint32_t *live_stack = NULL;
    uint64_t *live_bytes = NULL;
    catsite *cs = NULL;
    char **names = NULL;
    size_t n_cs = 0;
    od_status rc = OD_ERR_NOMEM;
    if (!c || !bytes || !count)
        goto out;
    c->device = device;
    const od_device_trace *tr = NULL;
    for (size_t i = 0; i < s->n_traces; i++)
        if (s->traces[i].device == device)
            tr = &s->traces[i];
    if (s->has_traces && tr && tr->n_entries && tr->n_entries < UINT32_MAX) {
        const od_trace_entry *e = tr->entries;
        size_t n = tr->n_entries;
        uint64_t start = od_trace_start_live_bytes(s, tr), cur = start, peak = start;
        size_t stop = 0;
        for (size_t i = 0; i < n; i++) {
            if (e[i].action == OD_ACT_ALLOC) {
                cur += od_round_request(e[i].size);
                if (cur > peak) {
                    peak = cur;
                    stop = i + 1;
                }
            } else if (e[i].action == OD_ACT_FREE_COMPLETED) {
                uint64_t r = od_round_request(e[i].size);
                cur = cur >= r ? cur - r : 0;
            }
        }
        c->have_peak = 1;
        c->peak_entry = stop ? stop - 1 : 0;
        c->peak_time_us = e[c->peak_entry].time_us;
        live_stack = malloc((stop ? stop : 1) * sizeof *live_stack);
        live_bytes = malloc((stop ? stop : 1) * sizeof *live_bytes);
        if (!live_stack || !live_bytes)
            goto out;
        uint64_t freed_unknown = 0;
        for (size_t i = 0; i < stop; i++) {
            uint32_t idx;
            if (e[i].action == OD_ACT_ALLOC) {
                live_stack[i] = e[i].stack < s->n_stacks ? e[i].stack : 0;
                live_bytes[i] = od_round_request(e[i].size);
                if (!od_u64map_put(&live, e[i].addr, (uint32_t)i))
                    goto out;
            } else if (e[i].action == OD_ACT_FREE_COMPLETED) {
                if (od_u64map_get(&live, e[i].addr, &idx))
                    od_u64map_del(&live, e[i].addr);
                else
                    freed_unknown += od_round_request(e[i].size); /* live before the trace */
            }
        }
        for (size_t k = 0; k <= live.cap; k++) {
            uint32_t idx;
            if (k < live.cap) {
                if (!live.keys[k])
                    continue;
                idx = live.vals[k];
            } else {
                if (!live.has_max)
                    continue;
                idx = live.max_val;
            }
            bytes[live_stack[idx]] += live_bytes[idx];
            count[live_stack[idx]]++;
        }
        /* What was live before the trace and still at the peak: blocks still live at the
         * end carry their own frames (torch records them per block); the rest was freed
         * after the peak without the trace ever showing its allocation: unknown. */
        od_u64map seen = {0};
        for (size_t i = 0; i < n; i++)
            if (e[i].action == OD_ACT_ALLOC && !od_u64map_put(&seen, e[i].addr, 0)) {
                od_u64map_free(&seen);
                goto out;
            }
        uint64_t known = 0;
        for (size_t i = 0; i < s->n_segments; i++) {
            const od_segment *seg = &s->segments[i];
            if (seg->device != device)
                continue;
            for (size_t k = 0; k < seg->n_blocks; k++) {
                const od_block *b = &s->blocks[seg->first_block + k];
                uint32_t dummy;
                if (!is_live(b) || od_u64map_get(&seen, b->address, &dummy))
                    continue;
                size_t slot = b->stack && b->stack < s->n_stacks ? b->stack : s->n_stacks;
                bytes[slot] += b->size;
                count[slot]++;
                known += b->size;
            }
        }
        od_u64map_free(&seen);
        uint64_t before = start >= freed_unknown ? start - freed_unknown : 0;
        before = before >= known ? before - known : 0;
        bytes[s->n_stacks] += before;
        count[s->n_stacks] += before ? 1 : 0;
    } else {
        for (size_t i = 0; i < s->n_segments; i++) {
            const od_segment *seg = &s->segments[i];
            if (seg->device != device)
                continue;
            for (size_t k = 0; k < seg->n_blocks; k++) {
                const od_block *b = &s->blocks[seg->first_block + k];
                if (!is_live(b))
                    continue;
                uint32_t st = b->stack < s->n_stacks ? b->stack : 0;
                /* Without frames a block says nothing about its purpose. */
                size_t slot = st ? st : s->n_stacks;
                bytes[slot] += b->size;
                count[slot]++;
            }
        }
    }
    for (size_t i = 0; i <= s->n_stacks; i++)
        n_cs += count[i] > 0;
    cs = malloc((n_cs ? n_cs : 1) * sizeof *cs);
    names = calloc(n_cs ? n_cs : 1, sizeof *names);
    if (!cs || !names)
        goto out;
    n_cs = 0;
    for (size_t i = 0; i <= s->n_stacks; i++) {
        if (!count[i])
            continue;
        od_category cat = i == s->n_stacks ? OD_CAT_UNKNOWN : od_categorize_stack(s, (uint32_t)i);
        c->bytes[cat] += bytes[i];
        c->count[cat] += count[i];
        c->total_bytes += bytes[i];
        char buf[512];
        if (i == s->n_stacks) {
            snprintf(buf, sizeof buf, "%s", tr ? OD_SITE_BEFORE_TRACE : OD_SITE_NO_FRAMES);
        } else {
            int64_t sf, wf;
            od_stack_site(s, (uint32_t)i, &sf, &wf);
            od_frame_format(s, sf, buf, sizeof buf);
        }
        size_t len = strlen(buf) + 1;
        names[n_cs] = malloc(len);
        if (!names[n_cs])
            goto out;
        memcpy(names[n_cs], buf, len);
        cs[n_cs] = (catsite){cat, names[n_cs], bytes[i]};
        n_cs++;
    }
    qsort(cs, n_cs, sizeof *cs, cmp_catsite);
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
    rc = OD_OK;
out:
    for (size_t i = 0; names && i < n_cs; i++)
        free(names[i]);
    free(names);
    free(cs);
    free(bytes);
    free(count);
    free(live_stack);
    free(live_bytes);
    od_u64map_free(&live);
    if (rc != OD_OK) {
        free(c);
        return od_fail(err, rc, "out of memory");
    }
    *out = c;
    return OD_OK;
}

void od_categories_free(od_categories *c)
{
    free(c);
}
