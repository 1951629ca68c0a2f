/* categorize.h - live memory at the trace's peak (of block bytes, trace.h) by purpose,
 * with plan's keys (parameters, gradients, optimizer_states, activations,
 * logits_and_loss, kv_cache, temporaries, workspace) plus unknown, judged from each
 * allocation's frames, then refined by its lifetime and size:
 *   parameters        made under a module's __init__, .to()/.cuda()/_apply, from_pretrained,
 *                     load_state_dict or weight initialization
 *   gradients         parameter gradients only: made by backward (no Python frame: the
 *                     autograd engine runs it in C++), sized like a parameter (each
 *                     parameter matches one), and alive until the next iteration
 *                     boundary (accumulated into .grad until the step); other backward
 *                     blocks are logits_and_loss when sized like the logits (their
 *                     gradient), else temporaries
 *   optimizer_states  made in torch.optim's state initialization (_init_group, state[...])
 *   temporaries       other allocations inside torch.optim (foreach intermediates), and
 *                     user code that calls torch directly outside any module's forward
 *   kv_cache          transformers' cache_utils, or a frame named like *cache*
 *   logits_and_loss   loss functions (cross_entropy, loss_utils, ...), and what the
 *                     outermost model's own forward makes directly (the lm_head's logits)
 *   activations       made inside nested module forwards
 *   workspace         cuBLAS workspaces (never freed, CUBLAS_WORKSPACE_CONFIG's size, made
 *                     by the first matmul or the autograd engine), torch.distributed /
 *                     NCCL, frames named *workspace*
 *   retained_graphs   made in an iteration at a site whose allocations outlive their
 *                     iterations and are still held at the end (the iterations'
 *                     survivors), and kept past the next boundary: memory a leaked graph
 *                     keeps alive (an eval forward without no_grad, a loss kept instead
 *                     of loss.item()), whatever its frames say
 *   parameters (also) for an inference trace, blocks live before the trace began and
 *                     through its last decode step (the weights loaded before the ring
 *                     buffer wrapped):
 *                     inferred, and said so by od_category_basis
 *   unknown           live before the trace began, or nothing above matched
 *
 * od_categorize returns a result the caller frees with od_categories_free (NULL is fine). */
#ifndef OD_CATEGORIZE_H
#define OD_CATEGORIZE_H

#include "model/iterations.h"
#include "model/trace.h"
#include "oomdoc/snapshot.h"

typedef enum {
    OD_CAT_PARAMETERS,
    OD_CAT_GRADIENTS,
    OD_CAT_OPTIMIZER_STATES,
    OD_CAT_ACTIVATIONS,
    OD_CAT_LOGITS_AND_LOSS,
    OD_CAT_KV_CACHE,
    OD_CAT_TEMPORARIES,
    OD_CAT_WORKSPACE,
    OD_CAT_RETAINED_GRAPHS,
    OD_CAT_UNKNOWN,
    OD_CAT_COUNT
} od_category;

#define OD_TOP_STACKS 10

typedef struct {
    int64_t device;
    int have_peak;                  /* 0: no trace: the figures are the blocks live at the end */
    size_t peak_entry;              /* trace index of the peak (first reached) */
    uint64_t peak_time_us;
    uint64_t total_bytes;           /* live at that instant: requests rounded to 512 B */
    uint64_t bytes[OD_CAT_COUNT];
    uint64_t count[OD_CAT_COUNT];
    char top_site[OD_CAT_COUNT][256]; /* the site holding the most bytes of each category */
    uint64_t top_site_bytes[OD_CAT_COUNT];
    /* The (stack, category) pairs holding the most at that instant (full stacks:
     * od_snapshot_stack), and the module paths (sites.h) holding the most. */
    struct {
        uint32_t stack;
        od_category category;
        uint64_t bytes, count;
    } top_stacks[OD_TOP_STACKS];
    size_t n_top_stacks;
    struct {
        char path[256];
        uint64_t bytes;
    } top_modules[OD_TOP_STACKS];
    size_t n_top_modules;
} od_categories;

/* Categorize the live memory at the trace's peak (without a trace: the blocks live in
 * the snapshot). weights_until: for an inference trace, the entry of its last decode
 * step (blocks live before the trace and until then are its weights); SIZE_MAX for
 * any other trace. Fails with OD_ERR_NOMEM only. */
od_status od_categorize(const od_trace *t, size_t weights_until, od_categories **out, od_error *err);

/* The same, with the trace's iterations (NULL: none; their survivors tell the retained
 * graphs), and, when life_categories is not NULL, every lifetime's category by the same
 * rules (a malloc'd array the caller frees, indexed as t->lives): what the report page
 * colours each allocation by, so its totals at the peak are these. */
od_status od_categorize_with(const od_trace *t, size_t weights_until, const od_iterations *it, od_categories **out,
                             uint8_t **life_categories, od_error *err);
void od_categories_free(od_categories *c);

/* The category one stack's frames say (stack 0, no Python frames: gradients, meaning
 * "made by backward", which od_categorize refines by lifetime and size). */
od_category od_categorize_stack(const od_snapshot *s, uint32_t stack);
/* How a category is decided, in a phrase (frames, lifetime, size match). */
const char *od_category_basis(od_category c);

const char *od_category_name(od_category c); /* "parameters", ... */

#endif
