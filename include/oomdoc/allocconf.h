/* allocconf.h - the allocator policy that PYTORCH_CUDA_ALLOC_CONF sets, defined once for
 * the two places that hold it: what a snapshot recorded (od_allocator_settings,
 * snapshot.h) and what the allocator model runs under (od_allocsim_config, allocsim.h).
 *
 * Both structs embed these fields through an anonymous union, so they read as plain
 * members (settings.max_split_size, cfg.expandable_segments) and copy as one value
 * (cfg.conf = snap->settings.conf). Plain data: nothing to free. Its text form is
 * od_allocsim_config_parse / od_allocsim_config_format (allocsim.h). */
#ifndef OD_ALLOCCONF_H
#define OD_ALLOCCONF_H

#include <stdint.h>

/* The field list, for OD_ALLOC_CONF_MEMBERS only. */
#define OD_ALLOC_CONF_FIELDS                                                                 \
    int64_t max_split_size;              /* bytes; -1 = unlimited (torch's default) */        \
    uint64_t max_non_split_rounding;     /* bytes; 0 = torch's default (20 MiB) */            \
    double garbage_collection_threshold; /* 0 = off */                                       \
    int expandable_segments;                                                                 \
    uint32_t roundup_power2_divisions[16]; /* by clamp(floor(log2 size) - 20, 0, 15); 0 = none */

typedef struct {
    OD_ALLOC_CONF_FIELDS
} od_alloc_conf;

/* Members of a struct that carries the policy: `conf` as a whole, and each field by name. */
#define OD_ALLOC_CONF_MEMBERS                                                                \
    union {                                                                                  \
        od_alloc_conf conf;                                                                  \
        struct {                                                                             \
            OD_ALLOC_CONF_FIELDS                                                             \
        };                                                                                   \
    }

#endif
