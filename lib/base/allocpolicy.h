/* allocpolicy.h - the caching allocator's fixed sizes and rounding rules (torch 2.x,
 * c10/cuda/CUDACachingAllocator.cpp), which the readers, the trace model and the
 * allocator model all need: one home below them. What PYTORCH_CUDA_ALLOC_CONF changes is
 * oomdoc/allocconf.h; the rounding that depends on it is od_allocsim_round_size
 * (model/allocsim.h). Pure functions; nothing to free. */
#ifndef OD_ALLOCPOLICY_H
#define OD_ALLOCPOLICY_H

#include <stdint.h>

/* Policy constants of the allocator (torch 2.x); names say which constant they mirror. */
#define OD_SIM_MIN_BLOCK      512u                  /* kMinBlockSize */
#define OD_SIM_SMALL_SIZE     (1ull << 20)          /* kSmallSize: small pool limit */
#define OD_SIM_SMALL_BUFFER   (2ull << 20)          /* kSmallBuffer: small segments, small pages */
#define OD_SIM_LARGE_BUFFER   (20ull << 20)         /* kLargeBuffer: 1-10 MiB requests, large pages */
#define OD_SIM_MIN_LARGE      (10ull << 20)         /* kMinLargeAlloc */
#define OD_SIM_ROUND_LARGE    (2ull << 20)          /* kRoundLarge */

/* The allocator's rounding of a request: multiples of 512 B, 512 B at least. */
uint64_t od_round_request(uint64_t size);

/* get_allocation_size: the segment size a request of (rounded) size would create. */
uint64_t od_allocsim_segment_size(uint64_t rounded);

#endif
