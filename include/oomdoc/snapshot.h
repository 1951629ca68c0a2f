/* snapshot.h - the model of a PyTorch CUDA memory snapshot
 * (torch.cuda.memory._dump_snapshot, torch 2.x; torch 1.13's list-of-segments layout).
 *
 * od_snapshot_load returns a snapshot the caller frees with od_snapshot_free (NULL is
 * fine). Everything inside (strings, frames, arrays) is owned by the snapshot and lives
 * until od_snapshot_free. The loader never executes anything from the file. */
#ifndef OD_SNAPSHOT_H
#define OD_SNAPSHOT_H

#include "allocconf.h"
#include "input.h"
#include "od.h"
#include "tracestore.h"

/* Block states as torch names them in segments[].blocks[].state. */
typedef enum {
    OD_BLOCK_INACTIVE,
    OD_BLOCK_ACTIVE_ALLOCATED,
    OD_BLOCK_ACTIVE_PENDING_FREE,
    OD_BLOCK_UNKNOWN
} od_block_state;

/* One stack frame. Strings are owned by the snapshot. */
typedef struct {
    const char *filename;
    const char *name;
    int64_t line;
} od_frame;

/* A call stack: frames[first .. first+count) of od_snapshot.stack_frames, innermost
 * first. Stack 0 is always the empty stack (no Python frames). */
typedef struct {
    uint32_t first;
    uint32_t count;
} od_stack;

typedef struct {
    uint64_t address;
    uint64_t size;
    uint64_t requested_size;  /* torch 1.13 has none: equals size there */
    uint32_t stack;           /* frames recorded for the block's allocation; 0 if none */
    uint8_t state;            /* od_block_state */
} od_block;

typedef struct {
    int64_t device;
    uint64_t address;
    uint64_t total_size;
    uint64_t allocated_size;
    uint64_t active_size;
    uint64_t requested_size;
    uint64_t stream;
    int is_large;             /* segment_type "large" (else "small") */
    int is_expandable;
    int64_t pool_id[2];       /* segment_pool_id; (0, 0) is the default pool */
    uint32_t stack;
    size_t first_block;       /* blocks[first_block .. first_block + n_blocks) */
    size_t n_blocks;          /* sorted by address */
} od_segment;

/* The allocator configuration the run used (top-level allocator_settings): the policy
 * fields of allocconf.h (max_split_size, garbage_collection_threshold, ...; torch does
 * not record max_non_split_rounding, left 0 = its default). */
typedef struct {
    int present;
    const char *alloc_conf;             /* PYTORCH_CUDA_ALLOC_CONF as given, or "" */
    OD_ALLOC_CONF_MEMBERS;
} od_allocator_settings;

/* An external annotation (e.g. Optimizer.step START/END). */
typedef struct {
    int64_t device;
    const char *stage;
    const char *name;
    uint64_t time_us;
} od_annotation;

typedef struct od_snapshot {
    int torch_major;            /* 2 for the dict layout, 1 for torch 1.13's list */
    od_segment *segments;
    size_t n_segments;          /* sorted by (device, address) */
    od_block *blocks;
    size_t n_blocks;
    int has_traces;             /* 0: no device_traces (torch 1.13): "trace: null" */
    od_device_trace *traces;
    size_t n_traces;            /* traces[i].device == i */
    od_frame *frames;
    size_t n_frames;
    uint32_t *stack_frames;     /* frame indices, per od_stack */
    od_stack *stacks;
    size_t n_stacks;
    od_annotation *annotations;
    size_t n_annotations;
    od_allocator_settings settings;
    void *priv;                 /* the loader's storage */
} od_snapshot;

/* Read a snapshot (plain or gzipped pickle) from in. Fails with OD_ERR_FORMAT /
 * OD_ERR_REFUSED / OD_ERR_LIMIT and the byte offset for bad input, OD_ERR_NOMEM. */
OD_API od_status od_snapshot_load(od_input *in, od_snapshot **out, od_error *err);
OD_API void od_snapshot_free(od_snapshot *snap);

/* The frames of a stack, innermost first; *count receives their number. */
OD_API const uint32_t *od_snapshot_stack(const od_snapshot *snap, uint32_t stack, uint32_t *count);

/* The name torch gives an action ("alloc", "free_requested", ...). */
OD_API const char *od_action_name(od_action a);

#endif
