/* stepneed.h - what a training step that failed in its first forward would have needed,
 * read from the trace itself when the model's structure shows in it (no config needed):
 *
 *   layers         the model was built layer by layer: each layer's parameters come from
 *                  the same construction frames (module __init__ inside __init__), so the
 *                  count of the most repeated (stack, size) among them is the layer count N
 *   layers done    inside the failing forward, an allocation that starts each layer repeats
 *                  at a steady period (the key whose occurrences are evenly spaced with the
 *                  longest gap, the earliest such); the layers it started, the last counted
 *                  by the share of its period done when the OOM came
 *   per layer      the bytes live at the OOM that the layers made, divided by the layers done
 *
 * forward_bytes = what was live besides the layers (parameters, what the forward kept
 * before its first layer, workspaces) + per layer x N: the forward through its last layer.
 * The logits, the loss and backward come after, and are not in the trace: forward_bytes is
 * an estimate and still a lower bound of the step. ckpt_bytes is the same under full
 * activation checkpointing: each layer keeps its input (the size of the allocation that
 * starts it) and one layer is recomputed at a time.
 *
 * Pure: reads the trace and the per-lifetime categories (categorize.h); nothing to free. */
#ifndef OD_STEPNEED_H
#define OD_STEPNEED_H

#include "analyze/categorize.h"
#include "model/trace.h"

typedef struct {
    int have;                      /* 0: the structure does not show; the rest is 0 */
    size_t layers_total;           /* N */
    double layers_done;            /* in the failing forward, e.g. 2.16 */
    size_t first_layer_entry;      /* where the first layer started */
    uint64_t params_bytes;         /* parameters live at the OOM */
    uint64_t besides_bytes;        /* live at the OOM and not made by the layers */
    uint64_t per_layer_bytes;      /* what one layer keeps */
    uint64_t layer_input_bytes;    /* what starts a layer: its input, as checkpointing keeps it */
    uint64_t forward_bytes;        /* besides + per layer x N */
    uint64_t ckpt_bytes;           /* besides + layer input x N + one layer */
} od_step_need;

/* Estimate the step that failed at trace entry oom (an `oom` entry) from t and its
 * lifetimes' categories (life_cats, as od_categorize_with gives them). out->have 0 when
 * the trace does not show a model built layer by layer, at least one whole layer done, or
 * the OOM inside a forward. Never fails. */
void od_step_need_estimate(const od_trace *t, size_t oom, const uint8_t *life_cats, od_step_need *out);

#endif
