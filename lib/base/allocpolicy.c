/* allocpolicy.c - the caching allocator's fixed rounding rules. */
#include "base/allocpolicy.h"

uint64_t od_round_request(uint64_t size)
{
    if (size < 512)
        return 512;
    return (size + 511) & ~(uint64_t)511;
}

uint64_t od_allocsim_segment_size(uint64_t rounded)
{
    if (rounded <= OD_SIM_SMALL_SIZE) return OD_SIM_SMALL_BUFFER;
    if (rounded < OD_SIM_MIN_LARGE) return OD_SIM_LARGE_BUFFER;
    return (rounded + OD_SIM_ROUND_LARGE - 1) / OD_SIM_ROUND_LARGE * OD_SIM_ROUND_LARGE;
}
