/* categorize.h - live memory at the trace's peak by purpose, with plan's keys
 * (parameters, gradients, optimizer_states, activations, logits_and_loss, kv_cache,
 * temporaries) plus workspace and unknown, judged from each allocation's frames:
 *   parameters        made under a module's __init__, .to()/.cuda()/_apply, from_pretrained,
 *                     load_state_dict or weight initialization
 *   gradients         no Python frame (the autograd engine runs backward in C++: parameter
 *                     and activation gradients), or torch.autograd's _make_grads
 *   optimizer_states  made in torch.optim's state initialization (_init_group, state[...])
 *   temporaries       other allocations inside torch.optim (foreach intermediates), and
 *                     user code that calls torch directly outside any module's forward
 *   kv_cache          transformers' cache_utils, or a frame named like *cache*
 *   logits_and_loss   loss functions (cross_entropy, loss_utils, ...), and what the
 *                     outermost model's own forward makes directly (the lm_head's logits)
 *   activations       made inside nested module forwards
 *   workspace         torch.distributed / NCCL, frames named *workspace*
 *   unknown           live before the trace began, or nothing above matched
 *
 * od_categorize returns a result the caller frees with od_categories_free (NULL is fine). */
#ifndef OD_CATEGORIZE_H
#define OD_CATEGORIZE_H

#include "snapshot.h"

typedef enum {
    OD_CAT_PARAMETERS,
    OD_CAT_GRADIENTS,
    OD_CAT_OPTIMIZER_STATES,
    OD_CAT_ACTIVATIONS,
    OD_CAT_LOGITS_AND_LOSS,
    OD_CAT_KV_CACHE,
    OD_CAT_TEMPORARIES,
    OD_CAT_WORKSPACE,
    OD_CAT_UNKNOWN,
    OD_CAT_COUNT
} od_category;

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
} od_categories;

/* Categorize device's live memory at its trace's peak (without a trace: the blocks live
 * in the snapshot, by their recorded frames). Fails with OD_ERR_NOMEM only. */
od_status od_categorize(const od_snapshot *s, int64_t device, od_categories **out, od_error *err);
void od_categories_free(od_categories *c);

/* The category of one stack's allocations (stack 0: no Python frames). */
od_category od_categorize_stack(const od_snapshot *s, uint32_t stack);

const char *od_category_name(od_category c); /* "parameters", ... */

#endif
