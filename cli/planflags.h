/* planflags.h - the workload flags that `plan`, `doctor` and `report` share: the training
 * step (--batch --seq --precision --optimizer --attention --checkpointing --grad-accum),
 * its parallelism and framework (--zero --dp --tp --pp --cp --vpp --sp --framework --fsdp
 * --main-grads --stage --ep --etp ...), fine-tuning (--lora-rank ...), offload, and the
 * inference settings (--task --prompt --new-tokens --weights --kv-cache ...). */
#ifndef OD_CLI_PLANFLAGS_H
#define OD_CLI_PLANFLAGS_H

#include "model/estimate.h"

/* The getopt_long entries, with these option codes. */
enum {
    OD_FLAG_BATCH = 0x1000, OD_FLAG_SEQ, OD_FLAG_PRECISION, OD_FLAG_OPTIMIZER, OD_FLAG_ATTENTION,
    OD_FLAG_CHECKPOINTING, OD_FLAG_TASK, OD_FLAG_ACCUM, OD_FLAG_ZERO, OD_FLAG_DP, OD_FLAG_TP,
    OD_FLAG_PP, OD_FLAG_CP, OD_FLAG_VPP, OD_FLAG_SP, OD_FLAG_LORA, OD_FLAG_LORA_TARGETS,
    OD_FLAG_BASE_WEIGHTS, OD_FLAG_FREEZE, OD_FLAG_CHUNKED, OD_FLAG_OFFLOAD, OD_FLAG_OFF_OPT,
    OD_FLAG_OFF_PARAMS, OD_FLAG_ZINIT, OD_FLAG_NODES, OD_FLAG_FRAMEWORK, OD_FLAG_FSDP,
    OD_FLAG_BUCKET_VIEW, OD_FLAG_MAIN_GRADS, OD_FLAG_STAGE, OD_FLAG_FIRST_LAYERS,
    OD_FLAG_LAST_LAYERS, OD_FLAG_EP, OD_FLAG_ETP, OD_FLAG_BUFFER, OD_FLAG_PROMPT, OD_FLAG_NEW,
    OD_FLAG_WEIGHTS, OD_FLAG_KVCACHE, OD_FLAG_KVDTYPE, OD_FLAG_PAGED
};
#define OD_WORKLOAD_OPTIONS                                                          \
    {"batch", required_argument, NULL, OD_FLAG_BATCH},                               \
    {"seq", required_argument, NULL, OD_FLAG_SEQ},                                   \
    {"precision", required_argument, NULL, OD_FLAG_PRECISION},                       \
    {"optimizer", required_argument, NULL, OD_FLAG_OPTIMIZER},                       \
    {"attention", required_argument, NULL, OD_FLAG_ATTENTION},                       \
    {"checkpointing", required_argument, NULL, OD_FLAG_CHECKPOINTING},               \
    {"task", required_argument, NULL, OD_FLAG_TASK},                                 \
    {"grad-accum", required_argument, NULL, OD_FLAG_ACCUM},                          \
    {"zero", required_argument, NULL, OD_FLAG_ZERO},                                 \
    {"dp", required_argument, NULL, OD_FLAG_DP},                                     \
    {"tp", required_argument, NULL, OD_FLAG_TP},                                     \
    {"pp", required_argument, NULL, OD_FLAG_PP},                                     \
    {"cp", required_argument, NULL, OD_FLAG_CP},                                     \
    {"vpp", required_argument, NULL, OD_FLAG_VPP},                                   \
    {"sp", no_argument, NULL, OD_FLAG_SP},                                           \
    {"lora-rank", required_argument, NULL, OD_FLAG_LORA},                            \
    {"lora-targets", required_argument, NULL, OD_FLAG_LORA_TARGETS},                 \
    {"base-weights", required_argument, NULL, OD_FLAG_BASE_WEIGHTS},                 \
    {"freeze", required_argument, NULL, OD_FLAG_FREEZE},                             \
    {"chunked-loss", no_argument, NULL, OD_FLAG_CHUNKED},                            \
    {"offload", no_argument, NULL, OD_FLAG_OFFLOAD},                                 \
    {"offload-optimizer", required_argument, NULL, OD_FLAG_OFF_OPT},                 \
    {"offload-params", required_argument, NULL, OD_FLAG_OFF_PARAMS},                 \
    {"zero-init", no_argument, NULL, OD_FLAG_ZINIT},                                 \
    {"nodes", required_argument, NULL, OD_FLAG_NODES},                               \
    {"framework", required_argument, NULL, OD_FLAG_FRAMEWORK},                       \
    {"fsdp", required_argument, NULL, OD_FLAG_FSDP},                                 \
    {"gradient-as-bucket-view", no_argument, NULL, OD_FLAG_BUCKET_VIEW},             \
    {"main-grads", required_argument, NULL, OD_FLAG_MAIN_GRADS},                     \
    {"stage", required_argument, NULL, OD_FLAG_STAGE},                               \
    {"first-stage-layers", required_argument, NULL, OD_FLAG_FIRST_LAYERS},           \
    {"last-stage-layers", required_argument, NULL, OD_FLAG_LAST_LAYERS},             \
    {"ep", required_argument, NULL, OD_FLAG_EP},                                     \
    {"etp", required_argument, NULL, OD_FLAG_ETP},                                   \
    {"buffer-factor", required_argument, NULL, OD_FLAG_BUFFER},                      \
    {"prompt", required_argument, NULL, OD_FLAG_PROMPT},                             \
    {"new-tokens", required_argument, NULL, OD_FLAG_NEW},                            \
    {"weights", required_argument, NULL, OD_FLAG_WEIGHTS},                           \
    {"kv-cache", required_argument, NULL, OD_FLAG_KVCACHE},                          \
    {"kv-dtype", required_argument, NULL, OD_FLAG_KVDTYPE},                          \
    {"paged-block", required_argument, NULL, OD_FLAG_PAGED}

/* If opt is one of the codes above, parse text (NULL for the flags without a value) into
 * w and return 0 (or print a usage error naming cmd and the accepted values, and return
 * OD_EXIT_USAGE); return -1 for any other option. */
int od_cli_workload_flag(const char *cmd, int opt, const char *text, od_workload *w);

/* After the last flag: what the flags imply together (FSDP's strategy is its ZeRO stage;
 * --gradient-as-bucket-view needs DDP). 0, or a usage error's exit code. */
int od_cli_workload_done(const char *cmd, od_workload *w);

/* Whether opt takes a comma list in `plan` (one table row per value): --precision,
 * --weights, --zero, --offload-optimizer, --offload-params. */
int od_cli_workload_listable(int opt);

/* The flag's name for messages ("--weights"), or NULL for codes not above. */
const char *od_cli_workload_flag_name(int opt);

#endif
