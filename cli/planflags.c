/* planflags.c - parsing the shared workload flags. */
#include "planflags.h"

#include <getopt.h>
#include <string.h>

#include "output.h"

static const char *value_name(int opt, int k)
{
    switch (opt) {
    case OD_FLAG_PRECISION: return od_precision_name((od_precision)k);
    case OD_FLAG_OPTIMIZER: return od_optimizer_name((od_optimizer)k);
    case OD_FLAG_ATTENTION: return od_attention_name((od_attention)k);
    default: return od_ckpt_name((od_ckpt)k);
    }
}

int od_cli_workload_flag(const char *cmd, int opt, const char *text, od_workload *w)
{
    long v;
    switch (opt) {
    case OD_FLAG_BATCH:
        if (od_cli_parse_int_opt(cmd, "--batch", text, 1, 1L << 24, &v))
            return OD_EXIT_USAGE;
        w->batch = (uint64_t)v;
        return 0;
    case OD_FLAG_SEQ:
        if (od_cli_parse_int_opt(cmd, "--seq", text, 1, 1L << 24, &v))
            return OD_EXIT_USAGE;
        w->seq = (uint64_t)v;
        return 0;
    case OD_FLAG_PRECISION:
    case OD_FLAG_OPTIMIZER:
    case OD_FLAG_ATTENTION:
    case OD_FLAG_CHECKPOINTING:
        break;
    default:
        return -1;
    }
    /* The estimate module names every value; "?" ends the list. */
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
    const char *flag = opt == OD_FLAG_PRECISION ? "--precision" : opt == OD_FLAG_OPTIMIZER ? "--optimizer"
                       : opt == OD_FLAG_ATTENTION ? "--attention" : "--checkpointing";
    return od_cli_usage_error(cmd, "%s: '%s' is not one of %s", flag, text, list);
}
