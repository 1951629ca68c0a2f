/* planflags.c - parsing the shared workload flags. */
#include "planflags.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "output.h"

/* The flag names, by code (for messages). */
static const struct { int opt; const char *name; } NAMES[] = {
    {OD_FLAG_BATCH, "--batch"}, {OD_FLAG_SEQ, "--seq"}, {OD_FLAG_PRECISION, "--precision"},
    {OD_FLAG_OPTIMIZER, "--optimizer"}, {OD_FLAG_ATTENTION, "--attention"},
    {OD_FLAG_CHECKPOINTING, "--checkpointing"}, {OD_FLAG_TASK, "--task"},
    {OD_FLAG_ACCUM, "--grad-accum"}, {OD_FLAG_ZERO, "--zero"}, {OD_FLAG_DP, "--dp"},
    {OD_FLAG_TP, "--tp"}, {OD_FLAG_PP, "--pp"}, {OD_FLAG_CP, "--cp"}, {OD_FLAG_VPP, "--vpp"},
    {OD_FLAG_SP, "--sp"}, {OD_FLAG_LORA, "--lora-rank"}, {OD_FLAG_LORA_TARGETS, "--lora-targets"},
    {OD_FLAG_BASE_WEIGHTS, "--base-weights"}, {OD_FLAG_FREEZE, "--freeze"},
    {OD_FLAG_CHUNKED, "--chunked-loss"}, {OD_FLAG_OFFLOAD, "--offload"},
    {OD_FLAG_OFF_OPT, "--offload-optimizer"}, {OD_FLAG_OFF_PARAMS, "--offload-params"},
    {OD_FLAG_ZINIT, "--zero-init"}, {OD_FLAG_NODES, "--nodes"}, {OD_FLAG_FRAMEWORK, "--framework"},
    {OD_FLAG_FSDP, "--fsdp"}, {OD_FLAG_BUCKET_VIEW, "--gradient-as-bucket-view"},
    {OD_FLAG_MAIN_GRADS, "--main-grads"}, {OD_FLAG_STAGE, "--stage"},
    {OD_FLAG_FIRST_LAYERS, "--first-stage-layers"}, {OD_FLAG_LAST_LAYERS, "--last-stage-layers"},
    {OD_FLAG_EP, "--ep"}, {OD_FLAG_ETP, "--etp"}, {OD_FLAG_BUFFER, "--buffer-factor"},
    {OD_FLAG_PROMPT, "--prompt"}, {OD_FLAG_NEW, "--new-tokens"}, {OD_FLAG_WEIGHTS, "--weights"},
    {OD_FLAG_KVCACHE, "--kv-cache"}, {OD_FLAG_KVDTYPE, "--kv-dtype"}, {OD_FLAG_PAGED, "--paged-block"},
};

const char *od_cli_workload_flag_name(int opt)
{
    for (size_t i = 0; i < sizeof NAMES / sizeof NAMES[0]; i++)
        if (NAMES[i].opt == opt)
            return NAMES[i].name;
    return NULL;
}

int od_cli_workload_listable(int opt)
{
    return opt == OD_FLAG_PRECISION || opt == OD_FLAG_WEIGHTS || opt == OD_FLAG_ZERO ||
           opt == OD_FLAG_OFF_OPT || opt == OD_FLAG_OFF_PARAMS;
}

/* The values a choice flag takes, in enum order; NULL ends the list. */
static const char *const TASKS[] = {"train", "infer", NULL};
static const char *const FRAMEWORKS[] = {"torch", "deepspeed", "fsdp", "ddp", "megatron", NULL};
static const char *const FSDPS[] = {"full", "grad-op", "hybrid", NULL};
static const char *const OFFLOADS[] = {"none", "cpu", "nvme", NULL};
static const char *const WEIGHTS[] = {"bf16", "fp16", "fp32", "int8", "int4", "gptq-int4",
                                      "awq-int4", "nf4", "fp8", NULL};
static const char *const KV_CACHES[] = {"none", "dynamic", "static", "paged", NULL};
static const char *const KV_DTYPES[] = {"bf16", "fp16", "fp32", "fp8", "int8", NULL};
static const int KV_BYTES[] = {2, 2, 4, 1, 1};
static const char *const BASES[] = {"nf4", "int8", "bf16", NULL};
static const char *const MAIN_GRADS[] = {"fp32", "bf16", NULL};
static const char *const STAGES[] = {"max", "first", "last", NULL};

/* Index of text in names, or a usage error naming flag and the accepted values. */
static int choose(const char *cmd, int opt, const char *text, const char *const *names, int *out)
{
    for (int i = 0; names[i]; i++)
        if (!strcmp(text, names[i])) {
            *out = i;
            return 0;
        }
    char list[200] = "";
    for (int j = 0; names[j]; j++) {
        strncat(list, j ? ", " : "", sizeof list - strlen(list) - 1);
        strncat(list, names[j], sizeof list - strlen(list) - 1);
    }
    return od_cli_usage_error(cmd, "%s: '%s' is not one of %s", od_cli_workload_flag_name(opt), text, list);
}

/* The value names the estimate module gives (precision, optimizer, attention,
 * checkpointing): "?" past the last. */
static const char *value_name(int opt, int k)
{
    switch (opt) {
    case OD_FLAG_PRECISION: return od_precision_name((od_precision)k);
    case OD_FLAG_OPTIMIZER: return od_optimizer_name((od_optimizer)k);
    case OD_FLAG_ATTENTION: return od_attention_name((od_attention)k);
    default: return od_ckpt_name((od_ckpt)k);
    }
}

static int named_value(const char *cmd, int opt, const char *text, od_workload *w)
{
    char list[200] = "";
    for (int k = 0; k < 32; k++) {
        const char *nm = value_name(opt, k);
        if (strcmp(nm, "?") == 0)
            break;
        if (strcmp(nm, text) == 0) {
            switch (opt) {
            case OD_FLAG_PRECISION: w->precision = (od_precision)k; break;
            case OD_FLAG_OPTIMIZER: w->optimizer = (od_optimizer)k; break;
            case OD_FLAG_ATTENTION: w->attention = (od_attention)k; break;
            default: w->ckpt = (od_ckpt)k; break;
            }
            return 0;
        }
        strncat(list, k ? ", " : "", sizeof list - strlen(list) - 1);
        strncat(list, nm, sizeof list - strlen(list) - 1);
    }
    return od_cli_usage_error(cmd, "%s: '%s' is not one of %s", od_cli_workload_flag_name(opt), text, list);
}

/* An integer flag in [lo, hi] into *out. */
static int count(const char *cmd, int opt, const char *text, long lo, long hi, uint64_t *out)
{
    long v;
    if (od_cli_parse_int_opt(cmd, od_cli_workload_flag_name(opt), text, lo, hi, &v))
        return OD_EXIT_USAGE;
    *out = (uint64_t)v;
    return 0;
}

/* --framework: one of the wrappers; FSDP's strategy defaults to FULL_SHARD. */
static void set_framework(od_workload *w, int v)
{
    w->deepspeed = v == 1;
    w->ddp = v == 3;
    w->megatron = v == 4;
    if (v == 2 && !w->fsdp)
        w->fsdp = OD_FSDP_FULL;
    if (v != 2)
        w->fsdp = OD_FSDP_NONE;
}

/* The flags that are a choice among names. */
static int choice_flag(const char *cmd, int opt, const char *text, od_workload *w)
{
    int v, rc;
    switch (opt) {
    case OD_FLAG_TASK:
        if (!(rc = choose(cmd, opt, text, TASKS, &v)))
            w->task = (od_task)v;
        return rc;
    case OD_FLAG_FRAMEWORK:
        if (!(rc = choose(cmd, opt, text, FRAMEWORKS, &v)))
            set_framework(w, v);
        return rc;
    case OD_FLAG_FSDP:
        if (!(rc = choose(cmd, opt, text, FSDPS, &v))) {
            if (w->deepspeed || w->ddp || w->megatron)
                return od_cli_usage_error(cmd, "--fsdp needs --framework fsdp");
            w->fsdp = v + 1;
        }
        return rc;
    case OD_FLAG_OFF_OPT:
        if (!(rc = choose(cmd, opt, text, OFFLOADS, &v)))
            w->offload_optimizer = v;
        return rc;
    case OD_FLAG_OFF_PARAMS:
        if (!(rc = choose(cmd, opt, text, OFFLOADS, &v)))
            w->offload_params = v;
        return rc;
    case OD_FLAG_WEIGHTS:
        if (!(rc = choose(cmd, opt, text, WEIGHTS, &v)))
            w->weights = (od_weights)v;
        return rc;
    case OD_FLAG_KVCACHE:
        if (!(rc = choose(cmd, opt, text, KV_CACHES, &v)))
            w->kv_cache = (od_kv_cache)v;
        return rc;
    case OD_FLAG_KVDTYPE:
        if (!(rc = choose(cmd, opt, text, KV_DTYPES, &v)))
            w->kv_bytes = KV_BYTES[v];
        return rc;
    case OD_FLAG_BASE_WEIGHTS:
        if (!(rc = choose(cmd, opt, text, BASES, &v)))
            w->base_weights = (od_base_weights)(v + 1);
        return rc;
    case OD_FLAG_MAIN_GRADS:
        if (!(rc = choose(cmd, opt, text, MAIN_GRADS, &v)))
            w->main_grads = v ? OD_MAIN_GRADS_BF16 : OD_MAIN_GRADS_FP32;
        return rc;
    case OD_FLAG_STAGE:
        if (!(rc = choose(cmd, opt, text, STAGES, &v)))
            w->stage = v;
        return rc;
    default:
        return -1;
    }
}

/* The flags that are a number. */
static int number_flag(const char *cmd, int opt, const char *text, od_workload *w)
{
    uint64_t v;
    int rc;
    switch (opt) {
    case OD_FLAG_BATCH: return count(cmd, opt, text, 1, 1L << 24, &w->batch);
    case OD_FLAG_SEQ: return count(cmd, opt, text, 1, 1L << 24, &w->seq);
    case OD_FLAG_ACCUM: return count(cmd, opt, text, 0, 1L << 20, &w->grad_accum);
    case OD_FLAG_ZERO:
        if (!(rc = count(cmd, opt, text, 0, 3, &v)))
            w->zero = (int)v;
        return rc;
    case OD_FLAG_DP: return count(cmd, opt, text, 0, 1L << 20, &w->dp);
    case OD_FLAG_TP: return count(cmd, opt, text, 0, 1024, &w->tp);
    case OD_FLAG_PP: return count(cmd, opt, text, 0, 4096, &w->pp);
    case OD_FLAG_CP: return count(cmd, opt, text, 0, 1024, &w->cp);
    case OD_FLAG_VPP: return count(cmd, opt, text, 0, 1024, &w->vpp);
    case OD_FLAG_LORA: return count(cmd, opt, text, 0, 65536, &w->lora_rank);
    case OD_FLAG_FREEZE: return count(cmd, opt, text, 0, 4096, &w->freeze_layers);
    case OD_FLAG_NODES: return count(cmd, opt, text, 0, 1L << 16, &w->nodes);
    case OD_FLAG_FIRST_LAYERS: return count(cmd, opt, text, 1, 4096, &w->first_stage_layers);
    case OD_FLAG_LAST_LAYERS: return count(cmd, opt, text, 1, 4096, &w->last_stage_layers);
    case OD_FLAG_EP: return count(cmd, opt, text, 1, 4096, &w->ep);
    case OD_FLAG_ETP: return count(cmd, opt, text, 1, 1024, &w->etp);
    case OD_FLAG_PROMPT: return count(cmd, opt, text, 0, 1L << 24, &w->prompt);
    case OD_FLAG_NEW: return count(cmd, opt, text, 0, 1L << 24, &w->new_tokens);
    case OD_FLAG_PAGED:
        if ((rc = count(cmd, opt, text, 1, 1L << 20, &w->paged_block)))
            return rc;
        if (w->kv_cache == OD_KV_DYNAMIC) /* the default: a block size means paged */
            w->kv_cache = OD_KV_PAGED;
        return 0;
    case OD_FLAG_BUFFER: {
        char *end;
        w->buffer_factor = strtod(text, &end);
        if (end == text || *end || !(w->buffer_factor >= 1 && w->buffer_factor <= 16))
            return od_cli_usage_error(cmd, "--buffer-factor: '%s' is not a factor between 1 and 16", text);
        return 0;
    }
    default:
        return -1;
    }
}

int od_cli_workload_flag(const char *cmd, int opt, const char *text, od_workload *w)
{
    int rc;
    switch (opt) {
    case OD_FLAG_PRECISION:
    case OD_FLAG_OPTIMIZER:
    case OD_FLAG_ATTENTION:
    case OD_FLAG_CHECKPOINTING:
        return named_value(cmd, opt, text, w);
    case OD_FLAG_SP: w->sp = 1; return 0;
    case OD_FLAG_CHUNKED: w->chunked_loss = 1; return 0;
    case OD_FLAG_OFFLOAD: w->offload_optimizer = OD_OFFLOAD_CPU; return 0;
    case OD_FLAG_ZINIT: w->zero_init = 1; return 0;
    case OD_FLAG_BUCKET_VIEW: w->ddp_bucket_view = 1; return 0;
    case OD_FLAG_LORA_TARGETS:
        if (od_lora_targets_parse(text, &w->lora_targets))
            return od_cli_usage_error(cmd, "--lora-targets: '%s' is not a list of q, k, v, o, "
                                      "gate, up, down, nor all-linear", text);
        return 0;
    default:
        break;
    }
    if ((rc = choice_flag(cmd, opt, text, w)) >= 0)
        return rc;
    return number_flag(cmd, opt, text, w);
}

int od_cli_workload_done(const char *cmd, od_workload *w)
{
    if (w->fsdp) { /* FULL_SHARD / HYBRID_SHARD are ZeRO-3, SHARD_GRAD_OP ZeRO-2 */
        int z = w->fsdp == OD_FSDP_GRAD_OP ? 2 : 3;
        if (w->zero && w->zero != z)
            return od_cli_usage_error(cmd, "--fsdp %s is ZeRO-%d: drop --zero %d", od_fsdp_name(w->fsdp),
                                      z, w->zero);
        w->zero = z;
    }
    if (w->ddp_bucket_view && !w->ddp)
        return od_cli_usage_error(cmd, "--gradient-as-bucket-view needs --framework ddp");
    return 0;
}
