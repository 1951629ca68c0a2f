/* planflags.h - the workload flags that `plan`, `doctor` and `report` share:
 * --batch --seq --precision --optimizer --attention --checkpointing. */
#ifndef OD_CLI_PLANFLAGS_H
#define OD_CLI_PLANFLAGS_H

#include "model/estimate.h"

/* The getopt_long entries, with these option codes. */
enum { OD_FLAG_BATCH = 0x1000, OD_FLAG_SEQ, OD_FLAG_PRECISION, OD_FLAG_OPTIMIZER, OD_FLAG_ATTENTION,
       OD_FLAG_CHECKPOINTING };
#define OD_WORKLOAD_OPTIONS                                                   \
    {"batch", required_argument, NULL, OD_FLAG_BATCH},                        \
    {"seq", required_argument, NULL, OD_FLAG_SEQ},                            \
    {"precision", required_argument, NULL, OD_FLAG_PRECISION},                \
    {"optimizer", required_argument, NULL, OD_FLAG_OPTIMIZER},                \
    {"attention", required_argument, NULL, OD_FLAG_ATTENTION},                \
    {"checkpointing", required_argument, NULL, OD_FLAG_CHECKPOINTING}

/* If opt is one of the codes above, parse text into w and return 0 (or print a usage
 * error naming cmd and the accepted values, and return OD_EXIT_USAGE); return -1 for
 * any other option. */
int od_cli_workload_flag(const char *cmd, int opt, const char *text, od_workload *w);

#endif
