/* replay.h - replay a snapshot's allocation trace through the allocator model (allocsim).
 *
 * Feeds the trace's alloc / free / oom entries to the simulator in order, takes segment
 * addresses from the recorded segment events where they fit, compares the simulated
 * segment events with the recorded ones, applies releases no request caused
 * (torch.cuda.empty_cache) where they stand, and for traces that start mid-run (ring
 * buffer wrapped) rebuilds the starting state from the final segments.
 *
 * Results are plain values in od_replay_result (nothing to free). */
#ifndef OD_REPLAY_H
#define OD_REPLAY_H

#include "allocsim.h"
#include "snapshot.h"

typedef struct {
    od_allocsim_config cfg;  /* settings and cap to replay under */
    int64_t device;          /* device trace to replay; -1 = the first with entries */
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
    int approximate;             /* the trace does not start at process start */
    od_allocsim_stats stats;     /* peaks and final figures of the model */
    od_replay_oom oom;           /* the first request the model failed */
    uint64_t ooms;               /* all failed requests */
    uint64_t recorded_ooms;      /* oom entries in the trace */
    /* segment events: recorded in the trace vs produced by the model, compared in order
     * by kind and size */
    uint64_t seg_recorded, seg_simulated, seg_matched, seg_addr_matched;
    uint64_t external_releases;  /* recorded releases no request caused (empty_cache) */
    int has_mismatch;
    size_t mismatch_trace_index; /* trace index of the recorded event, or trace_entries */
    od_seg_event mismatch_simulated;
    int mismatch_has_simulated;
    uint64_t alloc_addr_mismatches; /* alloc entries whose model address differs */
    uint64_t unknown_frees;      /* frees of addresses the model never handed out */
    uint64_t seeded_segments, seeded_blocks; /* starting state of a wrapped trace */
    /* the snapshot's own final figures (sum over the device's segments) */
    uint64_t snapshot_allocated_bytes, snapshot_reserved_bytes;
} od_replay_result;

/* The allocator configuration a snapshot records (allocator_settings), without a cap. */
void od_replay_config_from_snapshot(const od_snapshot *snap, od_allocsim_config *cfg);

/* Replay one trace with no snapshot around it (starting from an empty allocator).
 * Fails with OD_ERR_NOMEM. */
od_status od_replay_trace(const od_trace_entry *entries, size_t n, const od_replay_opts *opts,
                          od_replay_result *res, od_error *err);

/* Replay a snapshot's device trace. OD_ERR_FORMAT when the snapshot has no trace for the
 * device (torch 1.13 snapshots carry none); OD_ERR_NOMEM. */
od_status od_replay_snapshot(const od_snapshot *snap, const od_replay_opts *opts,
                             od_replay_result *res, od_error *err);

/* The result verifies: complete trace, every segment event matched, none left over. */
int od_replay_verified(const od_replay_result *res);

#endif
