/* replay.h - replay a snapshot's allocation trace through the allocator model (allocsim).
 *
 * Feeds the trace's alloc / free / oom entries to the simulator in order, takes segment
 * addresses from the recorded segment events where they fit, compares the simulated
 * segment events with the recorded ones, applies releases no request caused
 * (torch.cuda.empty_cache) where they stand, and for traces that start mid-run (ring
 * buffer wrapped) rebuilds the starting state from the final segments.
 *
 * CUDA graph private pools. While torch.cuda.graph captures, torch's allocator serves
 * the capturing stream from the graph's private pool (CUDACachingAllocator.cpp:
 * beginAllocateToPool puts (pool id, stream filter) on captures_underway, get_pool
 * routes a request whose stream passes the filter to that pool, endAllocateToPool ends
 * it; CUDAGraph::capture_begin calls beginAllocateToPool after torch.cuda.graph's
 * empty_cache()). A private pool's blocks are reused only by its own requests, stay
 * cached while the graph lives (releasePool, when the last graph goes, lets
 * release_cached_blocks free them via graph_pools_freeable), and while a capture is
 * underway a failed request skips releasing every cached segment. Trace entries carry
 * no pool id, so od_replay_snapshot infers it from what the snapshot shows:
 *   - a final segment with segment_pool_id != (0, 0) belongs to that private pool, one
 *     with (0, 0) to the default pools; an alloc entry whose address lies in a final
 *     segment, after the last recorded release overlapping that segment, was served from
 *     the segment's pool (evidence);
 *   - an alloc or oom entry without evidence (its segment was released later) drew from
 *     private pool P when the evidence before it and the evidence after it on its stream
 *     both say P (a capture is one stretch of one stream's requests), else from the
 *     default pools;
 *   - a capture is underway from the first to the last entry drawn from its pool.
 * A recorded segment_free of a segment the model holds in a private pool means the
 * graph was destroyed before it: the pool is released (releasePool) first. A trace
 * replayed without a snapshot (od_replay_trace) uses the default pools throughout.
 *
 * Results are plain values in od_replay_result (nothing to free). */
#ifndef OD_REPLAY_H
#define OD_REPLAY_H

#include "model/allocsim.h"
#include "oomdoc/snapshot.h"

/* Zero it before filling it in (memset, or = {0}): fields added later stay off. */
typedef struct {
    od_allocsim_config cfg;  /* settings and cap to replay under */
    int64_t device;          /* device trace to replay; -1 = the first with entries */
    /* Optional (NULL = none), caller-allocated, one slot per trace entry of the replayed
     * device: the replay writes, for each alloc entry the model served, the size of the
     * block it handed out in units of OD_SIM_MIN_BLOCK bytes (the rounded request, or more
     * when the remainder was not split), and 0 for every other entry (and for a block
     * of 2^32 units or more, which no device holds, or not a whole number of units).
     * The sum of these minus the sizes of the blocks freed so far is the model's memory_allocated() after each entry, except
     * for blocks seeded before a wrapped trace begins and oom entries a what-if serves.
     * Four bytes an entry: a ten-million-entry trace's slots take 40 MB. */
    uint32_t *block_units_out;
} od_replay_opts;

typedef struct {
    int happened;
    size_t event_index;      /* index into that device's trace list */
    uint64_t size_bytes;     /* the request as the trace gave it */
    int recorded;            /* the trace entry there was an oom entry */
    uint64_t allocated_bytes, reserved_bytes, cached_free_bytes, largest_free_bytes;
} od_replay_oom;

typedef struct {
    int64_t device;
    size_t trace_entries;
    uint64_t events_replayed;    /* alloc, free and oom entries fed to the model */
    int wrapped;                 /* the trace does not start at process start (ring
                                  * buffer wrapped): the starting state was rebuilt */
    int whatif;                  /* replayed under a policy other than the one the
                                  * snapshot records (the cap aside) */
    int approximate;             /* the figures may not be torch's: the trace wrapped, or
                                  * the replay under the run's own policy (this one, or
                                  * for a what-if one run alongside, with the same cap)
                                  * did not reproduce every recorded segment event */
    int answerable;              /* 0 for a what-if on a wrapped trace: its starting
                                  * state is rebuilt from segments the run's own policy
                                  * laid out, so the replay would only repeat the own
                                  * policy's figures; the figures are then not the
                                  * what-if's and must not be shown as such */
    od_allocsim_stats stats;     /* peaks and final figures of the model */
    uint64_t peak_allocated_index; /* the first entry that raised the model's allocated
                                  * bytes to stats.peak_allocated_bytes; trace_entries
                                  * when no entry did (the peak is a wrapped trace's
                                  * starting state, or the trace allocates nothing) */
    od_replay_oom oom;           /* the first request the model failed */
    uint64_t ooms;               /* all failed requests */
    uint64_t recorded_ooms;      /* oom entries in the trace */
    /* segment events: recorded in the trace vs produced by the model, compared in order
     * by kind and size */
    uint64_t seg_recorded, seg_simulated, seg_matched, seg_addr_matched;
    uint64_t external_releases;  /* recorded releases no request caused (empty_cache) */
    int has_mismatch;
    size_t mismatch_trace_index; /* trace index of the recorded event, or trace_entries */
    od_trace_entry mismatch_recorded; /* that recorded event (action, addr, size) */
    int mismatch_has_recorded;
    od_seg_event mismatch_simulated;
    int mismatch_has_simulated;
    uint64_t alloc_addr_mismatches; /* alloc entries whose model address differs */
    uint64_t unknown_frees;      /* frees of addresses the model never handed out */
    uint64_t seeded_segments, seeded_blocks; /* starting state of a wrapped trace */
    uint64_t private_pools;      /* private pools (segment_pool_id != (0, 0)) the final
                                  * segments show */
    uint64_t private_allocs;     /* alloc entries replayed into a private pool */
    /* the snapshot's own final figures (sum over the device's segments) */
    uint64_t snapshot_allocated_bytes, snapshot_reserved_bytes;
} od_replay_result;

/* The allocator configuration a snapshot records (allocator_settings), without a cap. */
void od_replay_config_from_snapshot(const od_snapshot *snap, od_allocsim_config *cfg);

/* Replay one trace with no snapshot around it (starting from an empty allocator, default
 * pools only; never a what-if). Fails with OD_ERR_NOMEM. */
od_status od_replay_trace(const od_device_trace *trace, const od_replay_opts *opts, od_replay_result *res,
                          od_error *err);

/* Replay a snapshot's device trace. A what-if on a complete trace also replays it under
 * the snapshot's own policy (same cap) to judge res->approximate. OD_ERR_FORMAT when the
 * snapshot has no trace for the device (torch 1.13 snapshots carry none); OD_ERR_ARG
 * for a device without a trace or a cap below what a wrapped trace starts with;
 * OD_ERR_NOMEM. */
od_status od_replay_snapshot(const od_snapshot *snap, const od_replay_opts *opts,
                             od_replay_result *res, od_error *err);

/* The same for n option sets at once (all of one device), res[k] for opts[k], exactly as
 * od_replay_snapshot gives each: the trace is read once (a streamed snapshot's too,
 * tracepass.h) and the replays run in up to `threads` threads (0 or 1: the calling one).
 * Fails as od_replay_snapshot does (the first failure in the order of opts), and with
 * OD_ERR_ARG when the option sets name different devices. */
od_status od_replay_snapshot_many(const od_snapshot *snap, const od_replay_opts *opts, size_t n, unsigned threads,
                                  od_replay_result *res, od_error *err);

/* This replay reproduced the recording: complete trace, every segment event matched,
 * none left over. */
int od_replay_verified(const od_replay_result *res);

#endif
