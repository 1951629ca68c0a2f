/* allocsim.h - a policy model of PyTorch's CUDA caching allocator (torch 2.x,
 * c10/cuda/CUDACachingAllocator.cpp), fed with requests and frees, emitting the segment
 * events (cudaMalloc / cudaFree / expandable map / unmap) the real allocator would.
 *
 * Pure and deterministic: no I/O, no clock. Addresses of new segments come from a caller
 * hook (a replay takes them from the recorded trace) or, without one, are handed out
 * downwards from a high address the way the driver did in the recordings.
 *
 * od_allocsim_create returns a simulator the caller frees with od_allocsim_free_sim
 * (NULL is fine). Events passed to the event hook are only valid during the call. */
#ifndef OD_ALLOCSIM_H
#define OD_ALLOCSIM_H

#include "base/allocpolicy.h"
#include "oomdoc/allocconf.h"
#include "oomdoc/od.h"

/* The allocator configuration: the policy PYTORCH_CUDA_ALLOC_CONF sets (allocconf.h:
 * max_split_size, max_non_split_rounding, garbage_collection_threshold,
 * expandable_segments, roundup_power2_divisions), plus the per-process cap. */
typedef struct {
    OD_ALLOC_CONF_MEMBERS;
    uint64_t allowed_bytes;             /* per-process cap (memory fraction); 0 = none */
    uint64_t device_total_bytes;        /* sizes an expandable reservation; 0 = 80 GiB */
} od_allocsim_config;

/* Defaults of torch: nothing set, no cap. */
void od_allocsim_config_default(od_allocsim_config *cfg);

/* Apply PYTORCH_CUDA_ALLOC_CONF text ("expandable_segments:True,max_split_size_mb:128").
 * Fails with OD_ERR_ARG naming the key for unknown keys or impossible values (torch's own
 * checks: max_split_size_mb > 20, 0 < garbage_collection_threshold < 1, divisions powers
 * of two). Keys torch accepts that do not change the policy are accepted and ignored. */
od_status od_allocsim_config_parse(od_allocsim_config *cfg, const char *conf, od_error *err);

/* The policy of cfg as PYTORCH_CUDA_ALLOC_CONF text, only the keys that differ from
 * torch's defaults ("" when none do), such that od_allocsim_config_parse of it onto a
 * default config gives back cfg's policy exactly (max_split_size and
 * max_non_split_rounding in whole MiB, as the text has them). The cap and the device
 * total are not part of it. Writes at most size bytes, NUL-terminated when size > 0, and
 * returns the length the whole text needs (like snprintf): truncated when >= size. */
size_t od_allocsim_config_format(const od_allocsim_config *cfg, char *buf, size_t size);

/* Whether a and b run the same policy (the cap and device total aside), taking each
 * default spelled out (max_non_split_rounding 20 MiB, a max_split_size <= 0 as
 * unlimited, divisions 0 and 1 as none) as equal to the default left out. */
int od_allocsim_config_same_policy(const od_allocsim_config *a, const od_allocsim_config *b);

typedef enum { OD_SEG_ALLOC, OD_SEG_FREE, OD_SEG_MAP, OD_SEG_UNMAP } od_seg_kind;

typedef struct {
    uint8_t kind;        /* od_seg_kind */
    uint64_t addr;
    uint64_t size;
    uint64_t stream;
    uint64_t pool;       /* 0 = the default pools */
} od_seg_event;

/* Address of a new segment: kind OD_SEG_ALLOC for a cudaMalloc of size bytes, OD_SEG_MAP
 * for the base of a new expandable reservation of size bytes. Return 0 to let the
 * simulator pick a synthetic address. */
typedef uint64_t (*od_allocsim_addr_fn)(void *ctx, od_seg_kind kind, uint64_t size,
                                        uint64_t stream);
typedef void (*od_allocsim_event_fn)(void *ctx, const od_seg_event *ev);

typedef struct od_allocsim od_allocsim;

od_status od_allocsim_create(const od_allocsim_config *cfg, od_allocsim **out, od_error *err);
void od_allocsim_free_sim(od_allocsim *sim);
void od_allocsim_set_hooks(od_allocsim *sim, od_allocsim_addr_fn addr_fn,
                           od_allocsim_event_fn event_fn, void *ctx);

/* The allocator's round_size (512 B minimum and multiple, roundup_power2_divisions). */
uint64_t od_allocsim_round_size(const od_allocsim_config *cfg, uint64_t size);

/* Flags for od_allocsim_malloc. */
#define OD_SIM_DEVICE_FULL 1u  /* every cudaMalloc / map fails (the device itself was full) */
#define OD_SIM_CAPTURING   2u  /* a CUDA graph capture is underway (torch's non-empty
                                * captures_underway): a failed request skips the release of
                                * every cached segment, whatever pool it draws from */

/* Serve a request of size bytes on stream from pool (0 = default pools; any other value
 * is a private pool, as a CUDA graph capture or a MemPool uses: torch's get_pool routes
 * a capturing stream's requests there, and blocks freed later return to the pool they
 * came from). Private pools split, cache and (with expandable_segments) expand like the
 * default ones, but only requests to the same pool reuse their blocks, and a failed
 * request to one never releases every cached segment (captures are underway). On
 * success *addr receives the block address and *oom 0; when the allocator would raise
 * OutOfMemoryError, *oom is 1 and nothing is allocated. Fails only with OD_ERR_NOMEM. */
od_status od_allocsim_malloc(od_allocsim *sim, uint64_t size, uint64_t stream, uint64_t pool,
                             unsigned flags, uint64_t *addr, int *oom);

/* The caller frees the block at addr (torch's free(): allocated bytes drop now). Unless
 * deferred (record_stream: the block waits for events), the block returns to the cache at
 * once; a deferred one returns at od_allocsim_free_complete. OD_ERR_ARG for an address
 * that is not an allocated block. */
od_status od_allocsim_free_request(od_allocsim *sim, uint64_t addr, int deferred);
/* The events of a deferred free completed: the block becomes reusable. Freeing a block
 * that was never requested both requests and completes it. A completion for an address
 * the cache already took back (release drains pending frees) is ignored (returns OD_OK,
 * *ignored = 1). OD_ERR_ARG when no block is at addr. */
od_status od_allocsim_free_complete(od_allocsim *sim, uint64_t addr, int *ignored);
/* Convenience: request + complete. */
od_status od_allocsim_free(od_allocsim *sim, uint64_t addr);

/* torch.cuda.empty_cache(): drain pending frees, release every unsplit cached segment
 * (unmap free pages of expandable segments), default pools and freeable private pools. */
void od_allocsim_empty_cache(od_allocsim *sim);
/* torch's releasePool: the last graph using a private pool went away, so from now on
 * releases (empty_cache, the retry path) may free its unsplit cached segments. */
void od_allocsim_release_pool(od_allocsim *sim, uint64_t pool);

/* The size of the allocated (or pending-free) block at addr, which can exceed the rounded
 * request when the remainder was not split off; 0 when no block in use starts there. */
uint64_t od_allocsim_block_size(const od_allocsim *sim, uint64_t addr);
/* memory_allocated() now: the bytes of all allocated blocks. */
uint64_t od_allocsim_allocated_bytes(const od_allocsim *sim);

/* Whether a request of size bytes would, right now, fail to find a cached block and go on
 * to garbage collection or to releasing cached segments (a cap, or flags' device-full). */
int od_allocsim_would_release(const od_allocsim *sim, uint64_t size, uint64_t stream,
                              uint64_t pool, unsigned flags);

/* Seed a state that existed before a trace began: a segment at addr (non-expandable) in
 * pool (0 = the default pools), then allocated blocks inside it. OD_ERR_ARG when it does
 * not fit; OD_ERR_NOMEM. */
od_status od_allocsim_seed_segment(od_allocsim *sim, uint64_t addr, uint64_t size,
                                   uint64_t stream, uint64_t pool, int small_pool);
od_status od_allocsim_seed_block(od_allocsim *sim, uint64_t addr, uint64_t size);

typedef struct {
    uint64_t allocated_bytes;       /* memory_allocated() */
    uint64_t reserved_bytes;        /* memory_reserved() */
    uint64_t requested_bytes;
    uint64_t peak_allocated_bytes;  /* max_memory_allocated() */
    uint64_t peak_reserved_bytes;
    uint64_t stranded_at_peak_bytes; /* reserved - allocated when reserved first peaked */
    uint64_t inactive_split_bytes;   /* free bytes inside split segments */
    uint64_t num_alloc_retries;
    uint64_t num_ooms;
    uint64_t num_device_alloc;      /* cudaMalloc + map calls */
    uint64_t num_device_free;
    uint64_t num_segments;          /* live non-expandable segments */
    uint64_t largest_free_block;    /* largest cached block in any pool */
    uint64_t cached_free_bytes;     /* reserved - allocated - pending frees */
} od_allocsim_stats;

void od_allocsim_get_stats(const od_allocsim *sim, od_allocsim_stats *st);
/* Forget peaks (torch.cuda.reset_peak_memory_stats). */
void od_allocsim_reset_peaks(od_allocsim *sim);

#endif
