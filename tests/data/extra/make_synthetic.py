#!/usr/bin/env python3
"""Write the hand-built snapshots under tests/data/synthetic/: small traces, each made for
one behaviour no real fixture isolates (see the comment above each builder below).

The files have the exact layout torch 2.x's torch.cuda.memory._dump_snapshot() writes
(copied from the real fixtures in tests/data/snapshots): a protocol-4 pickle of a dict with
segments (each with its blocks), device_traces, allocator_settings and external_annotations,
keys in torch's order. The traces are not typed in by hand: a small model of the CUDA
caching allocator below (the rules of c10/cuda/CUDACachingAllocator.cpp that the real
fixtures confirm: 512 B rounding, small pool <= 1 MiB in 2 MiB segments, 20 MiB segments
below 10 MiB, best fit by (stream, size, address), splitting, coalescing, descending
segment addresses, private pools) serves a scripted workload, records every trace entry
and builds the final segments from its own state, so trace and segments agree.

Python 3 standard library only; deterministic (no clock, no randomness): running it again
writes the same bytes. Run from the repository root:
    python3 tests/data/extra/make_synthetic.py
"""
import os
import pickle

OUT = os.path.join("tests", "data", "synthetic")

KiB = 1024
MiB = 1024 * 1024

# Allocator constants, as c10/cuda/CUDACachingAllocator.cpp names them.
K_MIN_BLOCK_SIZE = 512          # kMinBlockSize: rounding unit and smallest block
K_SMALL_SIZE = 1 * MiB          # kSmallSize: largest request served by the small pool
K_SMALL_BUFFER = 2 * MiB        # kSmallBuffer: small-pool segment size
K_LARGE_BUFFER = 20 * MiB       # kLargeBuffer: segment for requests between 1 and 10 MiB
K_MIN_LARGE_ALLOC = 10 * MiB    # kMinLargeAlloc: from here segments are the request ...
K_ROUND_LARGE = 2 * MiB         # kRoundLarge: ... rounded up to 2 MiB

DEFAULT_POOL = (0, 0)
SIDE_STREAM = 796917760         # a cudaStream_t value; stream 0 is the legacy default stream
TOP_ADDRESS = 0x7F3C00000000    # first segment ends here; later ones lie below (as the driver did)
START_TIME_US = 1796060000000000

TRAIN = "/home/user/project/train.py"
TORCH = "/home/user/.venv/lib/python3.12/site-packages/torch/"

# The allocator settings dict of a run without PYTORCH_CUDA_ALLOC_CONF (torch 2.11's keys).
ALLOCATOR_SETTINGS = {
    "PYTORCH_CUDA_ALLOC_CONF": "",
    "max_split_size": -1,
    "garbage_collection_threshold": 0.0,
    "expandable_segments": False,
    "pinned_num_register_threads": 1,
    "release_lock_on_cudamalloc": False,
    "pinned_use_cuda_host_register": False,
    "graph_capture_record_stream_reuse": False,
    "roundup_power2_divisions": {str(1 << i): 0 for i in range(16)},
}


def user(*calls):
    """Frames of train.py, innermost first: user(("train", 42), ("main", 80))."""
    return [{"name": n, "filename": TRAIN, "line": l} for n, l in calls] + \
        [{"name": "<module>", "filename": TRAIN, "line": 99}]


def torch_frame(path, line, name):
    return {"name": name, "filename": TORCH + path, "line": line}


class Block:
    """One allocator block, as torch's Block: the object keeps its requested_size and the
    segment's allocation context when it is split or merged, exactly as torch's does."""

    def __init__(self, seg, addr, size):
        self.seg, self.addr, self.size = seg, addr, size
        self.requested = 0
        self.allocated = False
        self.prev = self.next = None
        self.frames = []
        self.seg_frames = None  # context_when_segment_allocated


class Segment:
    def __init__(self, addr, size, stream, small, pool):
        self.addr, self.size, self.stream, self.small, self.pool = addr, size, stream, small, pool


class Allocator:
    """Device 0's caching allocator, recording the trace torch would record."""

    def __init__(self):
        self.trace = []
        self.annotations = []
        self.time_us = START_TIME_US
        self.next_top = TOP_ADDRESS
        self.free_blocks = {}   # (pool, small) -> set of inactive blocks
        self.active = {}        # address -> allocated block
        self.segments = []

    def tick(self, us=3):
        self.time_us += us
        return self.time_us

    def record(self, action, addr, size, stream, frames):
        self.trace.append({"action": action, "addr": addr, "size": size, "stream": stream,
                           "time_us": self.tick(), "compile_context": "N/A",
                           "user_metadata": "", "frames": [dict(f) for f in frames]})

    def annotate(self, stage, name):
        self.annotations.append({"stage": stage, "name": name, "device": 0,
                                 "time_us": self.tick()})

    @staticmethod
    def round_size(size):
        return K_MIN_BLOCK_SIZE if size < K_MIN_BLOCK_SIZE else \
            (size + K_MIN_BLOCK_SIZE - 1) // K_MIN_BLOCK_SIZE * K_MIN_BLOCK_SIZE

    @staticmethod
    def allocation_size(size):
        if size <= K_SMALL_SIZE:
            return K_SMALL_BUFFER
        if size < K_MIN_LARGE_ALLOC:
            return K_LARGE_BUFFER
        return (size + K_ROUND_LARGE - 1) // K_ROUND_LARGE * K_ROUND_LARGE

    def malloc(self, size, stream, frames, pool=DEFAULT_POOL):
        """Serve a request of size bytes on stream from pool; returns the address."""
        rsize = self.round_size(size)
        small = rsize <= K_SMALL_SIZE
        cached = self.free_blocks.setdefault((pool, small), set())
        fits = [b for b in cached if b.seg.stream == stream and b.size >= rsize]
        if fits:
            block = min(fits, key=lambda b: (b.size, b.addr))
        else:
            alloc = self.allocation_size(rsize)
            self.next_top -= alloc
            seg = Segment(self.next_top, alloc, stream, small, pool)
            self.segments.append(seg)
            block = Block(seg, seg.addr, alloc)
            block.seg_frames = [dict(f) for f in frames]
            cached.add(block)
            self.record("segment_alloc", seg.addr, alloc, stream, frames)
        remaining = block.size - rsize
        if (remaining >= K_MIN_BLOCK_SIZE) if small else (remaining > K_SMALL_SIZE):
            # torch's alloc_found_block: a new Block takes the low end; the old object,
            # with its requested_size and segment context, becomes the remainder.
            taken = Block(block.seg, block.addr, rsize)
            taken.prev, taken.next = block.prev, block
            if block.prev:
                block.prev.next = taken
            block.prev = taken
            block.addr += rsize
            block.size -= rsize
            block = taken
        else:
            cached.discard(block)
        block.allocated = True
        block.requested = size
        block.frames = [dict(f) for f in frames]
        self.active[block.addr] = block
        self.record("alloc", block.addr, size, stream, frames)
        return block.addr

    def free(self, addr, frames=()):
        block = self.active.pop(addr)
        self.record("free_requested", addr, block.requested, block.seg.stream, frames)
        self.record("free_completed", addr, block.requested, block.seg.stream, frames)
        block.allocated = False
        block.frames = []
        cached = self.free_blocks[(block.seg.pool, block.seg.small)]
        for other in (block.prev, block.next):   # previous neighbour first, as torch
            if other is None or other.allocated:
                continue
            if other is block.prev:
                block.addr = other.addr
                block.prev = other.prev
                if block.prev:
                    block.prev.next = block
            else:
                block.next = other.next
                if block.next:
                    block.next.prev = block
            block.size += other.size
            cached.discard(other)
        cached.add(block)

    def empty_cache(self, frames=()):
        """torch.cuda.empty_cache(): every unsplit cached segment of the default pool goes
        back to the driver, large pool first, each pool in (stream, size, address) order."""
        for small in (False, True):
            cached = self.free_blocks.get((DEFAULT_POOL, small), set())
            for b in sorted(cached, key=lambda b: (b.seg.stream, b.size, b.addr)):
                if b.prev is None and b.next is None:
                    cached.discard(b)
                    self.segments.remove(b.seg)
                    self.record("segment_free", b.addr, b.size, b.seg.stream, frames)

    def snapshot(self):
        blocks = {}
        for b in list(self.active.values()) + [b for s in self.free_blocks.values() for b in s]:
            blocks.setdefault(id(b.seg), []).append(b)
        segments = []
        for seg in sorted(self.segments, key=lambda s: s.addr):
            bl = sorted(blocks[id(seg)], key=lambda b: b.addr)
            assert bl[0].addr == seg.addr and sum(b.size for b in bl) == seg.size
            allocated = sum(b.size for b in bl if b.allocated)
            segments.append({
                "device": 0, "address": seg.addr, "total_size": seg.size,
                "allocated_size": allocated, "active_size": allocated,
                "requested_size": sum(b.requested for b in bl if b.allocated),
                "stream": seg.stream, "segment_type": "small" if seg.small else "large",
                "segment_pool_id": seg.pool, "is_expandable": False,
                "frames": bl[0].seg_frames or [],
                "blocks": [{"address": b.addr, "size": b.size, "requested_size": b.requested,
                            "state": "active_allocated" if b.allocated else "inactive",
                            "frames": b.frames} for b in bl],
            })
        return {"segments": segments, "device_traces": [self.trace],
                "allocator_settings": ALLOCATOR_SETTINGS,
                "external_annotations": self.annotations}


def write(name, alloc):
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, name), "wb") as f:
        pickle.dump(alloc.snapshot(), f, protocol=4)


# five_entry.pickle: the smallest trace whose two peaks differ. Entries:
#   0 segment_alloc  2 MiB small-pool segment (stream 0)
#   1 alloc          1 B at train.py:10 (a 512 B block): block bytes reach 512 here first
#   2 free_requested of it
#   3 free_completed of it
#   4 alloc          500 B at train.py:12 (again a 512 B block)
# The requested-bytes peak is entry 4 (500 B); the block-bytes peak (512 B) is first reached
# at entry 1. Final state: the segment holds one active_allocated 512 B block (requested 500)
# and a free remainder (requested_size 1: torch keeps the stale figure on the old Block).
def five_entry():
    a = Allocator()
    p = a.malloc(1, 0, user(("main", 10)))
    a.free(p, user(("main", 11)))
    a.malloc(500, 0, user(("main", 12)))
    assert len(a.trace) == 5
    return a


def train_loop(release):
    """Six training iterations on stream 0 plus a data stream. Each appends an 8 MiB
    tensor made at train.py:42 (in train) to a list; the per-iteration temporaries are
    freed within the iteration. Optimizer.step and Optimizer.zero_grad START/END
    annotations, one pair each per iteration. After the loop the model is deleted and,
    if release, the list is cleared first."""
    a = Allocator()
    linear = torch_frame("nn/modules/linear.py", 134, "forward")
    init = torch_frame("nn/modules/linear.py", 106, "__init__")
    weight = a.malloc(16 * MiB, 0, [init] + user(("build_model", 20), ("main", 70)))
    bias = a.malloc(16 * KiB, 0, [init] + user(("build_model", 20), ("main", 70)))
    kept = []
    for it in range(6):
        a.tick(1500)
        batch = a.malloc(2 * MiB, SIDE_STREAM, user(("load_batch", 30), ("train", 40), ("main", 75)))
        act = a.malloc(12 * MiB, 0, [linear] + user(("train", 41), ("main", 75)))
        kept.append(a.malloc(8 * MiB, 0, user(("train", 42), ("main", 75))))
        tmp = a.malloc(256 * KiB, 0, user(("train", 43), ("main", 75)))
        a.free(tmp, user(("train", 43), ("main", 75)))
        a.tick(800)
        # backward: the autograd engine's allocations carry no Python frames
        grad_w = a.malloc(16 * MiB, 0, [])
        grad_b = a.malloc(16 * KiB, 0, [])
        a.free(act)
        a.free(batch, user(("train", 45), ("main", 75)))
        a.annotate("START", "Optimizer.step#SGD.step")
        step = torch_frame("optim/sgd.py", 139, "step")
        buf = a.malloc(1 * MiB, 0, [step] + user(("train", 46), ("main", 75)))
        a.free(buf, [step] + user(("train", 46), ("main", 75)))
        a.annotate("END", "Optimizer.step#SGD.step")
        a.annotate("START", "Optimizer.zero_grad#SGD.zero_grad")
        zero = torch_frame("optim/optimizer.py", 1012, "zero_grad")
        a.free(grad_w, [zero] + user(("train", 47), ("main", 75)))
        a.free(grad_b, [zero] + user(("train", 47), ("main", 75)))
        a.annotate("END", "Optimizer.zero_grad#SGD.zero_grad")
    a.tick(2000)
    if release:
        for p in kept:
            a.free(p, user(("main", 80)))
    a.free(weight, user(("main", 81)))
    a.free(bias, user(("main", 81)))
    return a


# multistream_accumulate.pickle: memory accumulates over the iterations (+8 MiB each, all
# from train.py:42 in train) and is then released: the list is cleared after the last
# iteration, before the trace ends. Allocations on stream 0 and on a side stream (the
# batches). Final allocated 0 (the segments stay cached). Not a leak.
def multistream_accumulate():
    return train_loop(release=True)


# leak_to_end.pickle: the same workload, but the list is never cleared: the six 8 MiB blocks
# from train.py:42 are still active_allocated at the end. A real leak.
def leak_to_end():
    return train_loop(release=False)


# graph_pool.pickle: segments in the default pool (0, 0), in a CUDA-graph capture's own
# private pool (1, 0) and in two user-created pools (0, 1) (torch.cuda.MemPool()) and
# (0, 2) (torch.cuda.graph_pool_handle(), shared by a second capture), on two streams
# (stream 0 and the side stream the graphs are captured on).
#
# How PyTorch numbers pools (the two counters uid_ and uuid_ both start at 1; (0, 0) means
# "no pool", i.e. the default pool):
#   aten/src/ATen/core/MemPool.cpp (torch 2.11; earlier c10/cuda/MemPool.cpp and
#   aten/src/ATen/cuda/MemPool.cpp): create_mempool_id(is_user_created) returns
#   {0, uid_++} for a user-created pool and {uuid_++, 0} otherwise.
#   torch/cuda/memory.py: MemPool.__init__ passes is_user_created=True, so
#   torch.cuda.MemPool().id is (0, N).
#   aten/src/ATen/cuda/CUDAGraph.cpp: graph_pool_handle() is MemPool::graph_pool_handle()
#   (is_user_created defaults to true): (0, N), "Sets just the second value, to distinguish
#   it from MempoolId_ts created ... in capture_begin". capture_begin(pool) keeps a
#   caller's pool (another graph's pool() or a handle; "only one should be nonzero") and
#   otherwise creates graph_pool_handle(false): (N, 0), asserting first > 0.
#   c10/cuda/CUDACachingAllocator.cpp: snapshot() sets each segment's owner_private_pool_id
#   to its pool's owner_MempoolId() (default-pool segments keep (0, 0)); the Python binding
#   writes it as segment_pool_id.
# The real capture in tests/data/snapshots/snap_cudagraph.pickle shows (1, 0) for its graph.
def graph_pool():
    a = Allocator()
    user_pool = (0, 1)      # pool = torch.cuda.MemPool()
    handle = (0, 2)         # handle = torch.cuda.graph_pool_handle()
    graph1 = (1, 0)         # g1 = torch.cuda.CUDAGraph(); torch.cuda.graph(g1, stream=s)
    s = SIDE_STREAM
    linear = torch_frame("nn/modules/linear.py", 134, "forward")
    init = torch_frame("nn/modules/linear.py", 106, "__init__")
    graphs = torch_frame("cuda/graphs.py", 257, "__enter__")
    a.malloc(16 * MiB, 0, [init] + user(("main", 50)))            # lin.weight 2048 x 2048
    a.malloc(8 * KiB, 0, [init] + user(("main", 50)))             # lin.bias
    x = a.malloc(512 * KiB, 0, user(("main", 51)))                # static input 64 x 2048
    # warm-up on the side stream (default pool): cuBLAS workspace, outputs freed
    a.malloc(32 * MiB, s, [linear] + user(("step", 45), ("main", 54)))
    for _ in range(3):
        a.tick(400)
        h = a.malloc(512 * KiB, s, [linear] + user(("step", 45), ("main", 54)))
        y = a.malloc(512 * KiB, s, user(("step", 45), ("main", 54)))
        a.free(h, user(("step", 45), ("main", 54)))
        z = a.malloc(16 * KiB, s, user(("step", 46), ("main", 54)))
        a.free(y, user(("main", 54)))
        a.free(z, user(("main", 54)))
    # capture g1 into its own private pool (torch.cuda.graph's __enter__ empties the cache)
    a.tick(5000)
    a.empty_cache([graphs] + user(("main", 57)))
    a.malloc(32 * MiB, s, [linear] + user(("step", 45), ("main", 58)), pool=graph1)
    h = a.malloc(512 * KiB, s, [linear] + user(("step", 45), ("main", 58)), pool=graph1)
    a.malloc(512 * KiB, s, user(("step", 45), ("main", 58)), pool=graph1)      # static y
    a.free(h, user(("step", 45), ("main", 58)))
    a.malloc(16 * KiB, s, user(("step", 46), ("main", 58)), pool=graph1)       # static out
    # capture g2 into the graph_pool_handle() pool
    a.tick(5000)
    a.empty_cache([graphs] + user(("main", 61)))
    a.malloc(4 * MiB, s, user(("step2", 65), ("main", 62)), pool=handle)
    a.malloc(64 * KiB, s, user(("step2", 66), ("main", 62)), pool=handle)
    # with torch.cuda.use_mem_pool(pool): allocations of stream 0 go to the MemPool
    a.malloc(6 * MiB, 0, user(("main", 70)), pool=user_pool)
    a.malloc(128 * KiB, 0, user(("main", 71)), pool=user_pool)
    # replays allocate nothing; then one eager tensor in the default pool
    a.tick(12000)
    a.free(x, user(("main", 74)))
    a.malloc(4 * MiB, 0, user(("main", 76)))
    return a


def main():
    write("five_entry.pickle", five_entry())
    write("multistream_accumulate.pickle", multistream_accumulate())
    write("leak_to_end.pickle", leak_to_end())
    write("graph_pool.pickle", graph_pool())


if __name__ == "__main__":
    main()
