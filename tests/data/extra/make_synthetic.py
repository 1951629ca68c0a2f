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
    """Device 0's caching allocator, recording the trace torch would record.

    share_frames: build each call's frames as torch's snapshot does: one dict object per
    code location (name, filename, line), and one list for all that one call records (the
    segment_alloc and alloc of a request and the block's frames; the free_requested and
    free_completed of a free), so the pickle refers back to them instead of repeating
    them. The builders before spike() copy every frame (share_frames False): the same
    content, bigger files."""

    def __init__(self, share_frames=False):
        self.share_frames = share_frames
        self.frame_objects = {}  # (name, filename, line) -> the one dict (share_frames)
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

    def context(self, frames):
        """The frames one call records: the shared list (share_frames), else frames as given."""
        if not self.share_frames:
            return frames
        return [self.frame_objects.setdefault((f["name"], f["filename"], f["line"]), dict(f))
                for f in frames]

    def copy(self, frames):
        return frames if self.share_frames else [dict(f) for f in frames]

    def record(self, action, addr, size, stream, frames):
        self.trace.append({"action": action, "addr": addr, "size": size, "stream": stream,
                           "time_us": self.tick(), "compile_context": "N/A",
                           "user_metadata": "", "frames": self.copy(frames)})

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
        frames = self.context(frames)
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
            block.seg_frames = self.copy(frames)
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
        block.frames = self.copy(frames)
        self.active[block.addr] = block
        self.record("alloc", block.addr, size, stream, frames)
        return block.addr

    def free(self, addr, frames=()):
        block = self.active.pop(addr)
        frames = self.context(frames)
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
        frames = self.context(frames)
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


# twostream_loop.pickle: a plain Python loop on two streams, without a model: no module
# frames, no Optimizer annotations, no generate(). Each of its six iterations makes a
# batch on a side stream and a 24 MiB result on stream 0 (both freed in the iteration) and
# keeps a 14.69 MiB tensor made at train.py:19 in a list; after the loop the list is
# cleared, before the trace ends. The repeating allocation tells the iterations. Neither an
# inference trace (no decode steps, no KV cache) nor a leak (what accumulated is released).
def twostream_loop():
    a = Allocator(share_frames=True)
    kept = []
    for _ in range(6):
        a.tick(1200)
        x = a.malloc(4 * MiB, SIDE_STREAM, user(("make_batch", 12), ("main", 30)))
        y = a.malloc(24 * MiB, 0, user(("work", 18), ("main", 31)))
        kept.append(a.malloc(14 * MiB + 704 * KiB, 0, user(("work", 19), ("main", 31))))
        a.tick(300)
        a.free(y, user(("work", 20), ("main", 31)))
        a.free(x, user(("main", 32)))
    a.tick(1000)
    for k in kept:
        a.free(k, user(("main", 34)))
    return a


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


# spike.pickle: eight training iterations on stream 0 with constant work, except iteration 5
# (0-based index 4) whose batch has a 3x longer sequence. Optimizer.step and
# Optimizer.zero_grad START/END annotations, one pair each per iteration (SGD without
# momentum: the step allocates nothing). Each iteration: a batch of token ids (train.py:50),
# then a forward (train.py:51) of an embedding (train.py:31) and four blocks, each a
# Linear(1024, 1024) (train.py:25) and a GELU (train.py:26): nine activations of
# batch 8 x seq 512 x hidden 1024 x 4 B = 16 MiB, kept for backward. The backward
# (train.py:53) is the autograd engine's: no Python frames. It makes the gradients of the
# activations (freed as it goes, with the activations they replace) and the parameters'
# .grad (4 x 4 MiB + 4 x 4 KiB for the blocks, 32 MiB for the embedding), which live until
# zero_grad(set_to_none=True) frees them. In the spike the same stacks make 48 MiB
# activations (seq 1536): that iteration's peak is about 576 MiB against about 224 MiB in
# the others, all from the embedding, the Linear and the GELU (16 MiB -> 48 MiB); its
# 48 MiB requests fit no cached block, so it adds 48 MiB segments that stay cached.
# At the end the parameters and the last loss are still allocated.
SPIKE_BATCH = 8
SPIKE_SEQ = 512
SPIKE_HIDDEN = 1024
SPIKE_VOCAB = 8192
SPIKE_LAYERS = 4
SPIKE_AT = 4        # 0-based iteration whose sequence is 3x longer


def spike():
    a = Allocator(share_frames=True)
    B, H, V = SPIKE_BATCH, SPIKE_HIDDEN, SPIKE_VOCAB
    lin_init = torch_frame("nn/modules/linear.py", 106, "__init__")
    emb_init = torch_frame("nn/modules/sparse.py", 167, "__init__")
    linear = torch_frame("nn/modules/linear.py", 134, "forward")
    embedding = [torch_frame("nn/functional.py", 2551, "embedding"),
                 torch_frame("nn/modules/sparse.py", 192, "forward")]
    build = user(("__init__", 36), ("main", 70))
    a.malloc(V * H * 4, 0, [emb_init] + build)                  # the embedding's weight
    for _ in range(SPIKE_LAYERS):
        blk = user(("__init__", 22), ("__init__", 37), ("main", 70))
        a.malloc(H * H * 4, 0, [lin_init] + blk)                 # fc.weight
        a.malloc(H * 4, 0, [lin_init] + blk)                     # fc.bias
    zero = torch_frame("optim/optimizer.py", 1012, "zero_grad")
    ids = loss = None
    for it in range(8):
        a.tick(1500)
        S = SPIKE_SEQ * (3 if it == SPIKE_AT else 1)
        act = B * S * H * 4
        if ids is not None:     # the previous batch and loss are dropped when rebound
            a.free(ids, user(("train", 50), ("main", 75)))
            a.free(loss, user(("train", 52), ("main", 75)))
        ids = a.malloc(B * S * 8, 0, user(("load_batch", 44), ("train", 50), ("main", 75)))
        fwd = (("train", 51), ("main", 75))                        # out = model(ids)
        x = a.malloc(act, 0, embedding + user(("forward", 31), *fwd))
        saved = [x]
        for _ in range(SPIKE_LAYERS):
            h = a.malloc(act, 0, [linear] + user(("forward", 25), ("forward", 33), *fwd))
            x = a.malloc(act, 0, user(("forward", 26), ("forward", 33), *fwd))
            saved += [h, x]
        loss = a.malloc(4, 0, user(("train", 52), ("main", 75)))        # out.mean()
        a.tick(800)
        # backward (train.py:53): the engine's allocations carry no Python frames
        g = a.malloc(act, 0, [])                  # d loss / d out
        grads = [None] * SPIKE_LAYERS
        for l in reversed(range(SPIKE_LAYERS)):
            a_out, h = saved.pop(), saved.pop()
            gh = a.malloc(act, 0, [])             # GELU backward
            a.free(g)
            a.free(a_out)
            grads[l] = (a.malloc(H * H * 4, 0, []), a.malloc(H * 4, 0, []))   # .grad of fc
            g = a.malloc(act, 0, [])              # Linear backward: d / d input
            a.free(gh)
            a.free(h)
        emb_grad = a.malloc(V * H * 4, 0, [])     # embedding backward: dense weight grad
        a.free(g)
        a.free(saved.pop())
        a.annotate("START", "Optimizer.step#SGD.step")
        a.tick(200)
        a.annotate("END", "Optimizer.step#SGD.step")
        a.annotate("START", "Optimizer.zero_grad#SGD.zero_grad")
        zf = [zero] + user(("train", 55), ("main", 75))
        a.free(emb_grad, zf)
        for gw, gb in grads:
            a.free(gw, zf)
            a.free(gb, zf)
        a.annotate("END", "Optimizer.zero_grad#SGD.zero_grad")
    a.tick(2000)
    a.free(ids, user(("main", 80)))
    return a


# generate_kv.pickle: an inference run of model.generate() (transformers 5.17's _sample,
# greedy) with the default dynamic KV cache, on stream 0. A Llama-style model: 2 layers,
# hidden 256 (4 heads, 4 key/value heads, head_dim 64), MLP 688, vocab 32000, bf16,
# built first under from_pretrained / __init__ frames (35 MiB of weights). infer.py then
# moves a prompt of batch 4 x 32 tokens to the GPU and calls generate: a prefill of the 32
# positions, then 40 decode steps of one position each (max_new_tokens=41). Every
# allocation carries Python frames down to infer.py; every one made by generate (all but
# the weights and the prompt) has a frame named generate (transformers/generation/
# utils.py) above the user's frame infer.py:41 main. (torch's nn.Module call frames are
# left out, as in the builders above.)
# Per decode step: a constant set of temporaries (embedding, rotary cos/sin, RMSNorms,
# projections, attention, MLP, lm_head logits of batch x 1 x vocab (logits_to_keep=1)
# and their float32 copy), all freed within the step; and per layer the cache update of
# DynamicLayer.update (cache_utils.py): keys = torch.cat([keys, k]) allocates the new key
# tensor of L+1 positions and frees the old one of L positions, and the same for the
# values. The token ids and attention mask, which generate also extends with torch.cat
# every step (32 B a step, turned into 512 B jumps by the rounding), are left out, so
# live memory grows by exactly the cache.
# EXPECTED GROWTH PER DECODE STEP: 2 layers x 2 (K, V) x batch 4 x kv_heads 4 x head_dim 64
# x 2 B = 8192 B (8 KiB), exactly, in requested and in block bytes (every cache tensor is
# a multiple of 512 B: 2048 B per position per layer per K or V). When generate returns,
# the cache is freed; the weights and the prompt stay allocated.
KV_LAYERS = 2
KV_BATCH = 4
KV_HEADS = 4            # query heads
KV_KV_HEADS = 4
KV_HEAD_DIM = 64
KV_HIDDEN = KV_HEADS * KV_HEAD_DIM
KV_MLP = 688
KV_VOCAB = 32000
KV_PROMPT = 32
KV_DECODE_STEPS = 40
KV_GROWTH_PER_STEP = KV_LAYERS * 2 * KV_BATCH * KV_KV_HEADS * KV_HEAD_DIM * 2   # 8192 B

INFER = "/home/user/project/infer.py"
TRANSFORMERS = "/home/user/.venv/lib/python3.12/site-packages/transformers/"
LLAMA = "models/llama/modeling_llama.py"


def infer_user(*calls):
    return [{"name": n, "filename": INFER, "line": l} for n, l in calls] + \
        [{"name": "<module>", "filename": INFER, "line": 60}]


def tf_frame(path, line, name):
    return {"name": name, "filename": TRANSFORMERS + path, "line": line}


def in_sample(line):
    """Frames of generate's _sample loop at line (innermost first) out to the user."""
    return [tf_frame("generation/utils.py", line, "_sample"),
            tf_frame("generation/utils.py", 2802, "generate"),
            torch_frame("utils/_contextlib.py", 124, "decorate_context")] + infer_user(("main", 41))


def in_causal(line):        # LlamaForCausalLM.forward, called by _sample
    return [tf_frame(LLAMA, line, "forward"), tf_frame("utils/generic.py", 939, "wrapper")] + in_sample(3030)


def in_model(line):         # LlamaModel.forward
    return [tf_frame(LLAMA, line, "forward"), tf_frame("utils/output_capturing.py", 286, "wrapper"),
            tf_frame("utils/generic.py", 1068, "wrapper")] + in_causal(467)


def in_layer(line):         # LlamaDecoderLayer.forward (the same stacks for every layer)
    return [tf_frame(LLAMA, line, "forward"), tf_frame("modeling_layers.py", 109, "__call__")] + in_model(403)


def generate_kv():
    a = Allocator(share_frames=True)
    B, H, I, V, KVH, HD = KV_BATCH, KV_HIDDEN, KV_MLP, KV_VOCAB, KV_KV_HEADS, KV_HEAD_DIM
    linear = torch_frame("nn/modules/linear.py", 134, "forward")
    # --- the model: from_pretrained(..., dtype=torch.bfloat16, device_map="cuda")
    load = [tf_frame("modeling_utils.py", 4921, "from_pretrained")] + infer_user(("load_model", 14), ("main", 38))
    causal_init = [tf_frame(LLAMA, 452, "__init__")] + load         # LlamaForCausalLM.__init__
    model_init = lambda line: [tf_frame(LLAMA, line, "__init__")] + causal_init   # LlamaModel
    lin_init = torch_frame("nn/modules/linear.py", 106, "__init__")
    a.malloc(V * H * 2, 0, [torch_frame("nn/modules/sparse.py", 167, "__init__")] + model_init(372))
    for _ in range(KV_LAYERS):      # LlamaDecoderLayer.__init__, from LlamaModel.__init__:374
        layer_init = lambda line: [tf_frame(LLAMA, line, "__init__")] + model_init(374)
        for line, out in ((226, KV_HEADS), (229, KVH), (232, KVH), (235, KV_HEADS)):   # q, k, v, o
            a.malloc(out * HD * H * 2, 0, [lin_init, tf_frame(LLAMA, line, "__init__")] + layer_init(298))
        for line in (163, 164, 165):                                                   # gate, up, down
            a.malloc(I * H * 2, 0, [lin_init, tf_frame(LLAMA, line, "__init__")] + layer_init(299))
        for line in (300, 301):                                                        # the two RMSNorms
            a.malloc(H * 2, 0, [tf_frame(LLAMA, 55, "__init__")] + layer_init(line))
    a.malloc(H * 2, 0, [tf_frame(LLAMA, 55, "__init__")] + model_init(376))            # final norm
    a.malloc(HD // 2 * 4, 0, [tf_frame(LLAMA, 86, "__init__")] + model_init(377))      # rotary inv_freq
    a.malloc(V * H * 2, 0, [lin_init, tf_frame(LLAMA, 455, "__init__")] + load)        # lm_head
    a.tick(20000)
    prompt = a.malloc(B * KV_PROMPT * 8, 0, [tf_frame("tokenization_utils_base.py", 806, "to")] +
                      infer_user(("main", 40)))
    a.tick(3000)
    cache = {}              # (layer, 0 for keys / 1 for values) -> (address, positions)

    def rmsnorm(S, at):
        """LlamaRMSNorm.forward (lines 64-67), called from the stack at."""
        fr = lambda line: [tf_frame(LLAMA, line, "forward")] + at
        f = a.malloc(B * S * H * 4, 0, fr(64))              # hidden_states.to(torch.float32)
        p = a.malloc(B * S * H * 4, 0, fr(65))              # .pow(2)
        var = a.malloc(B * S * 4, 0, fr(65))                # .mean(-1, keepdim=True)
        a.free(p, fr(65))
        ve = a.malloc(B * S * 4, 0, fr(66))                 # variance + eps
        r = a.malloc(B * S * 4, 0, fr(66))                  # torch.rsqrt
        a.free(ve, fr(66))
        h = a.malloc(B * S * H * 4, 0, fr(66))              # hidden_states * rsqrt
        a.free(r, fr(66))
        a.free(var, fr(66))
        a.free(f, fr(66))
        c = a.malloc(B * S * H * 2, 0, fr(67))              # .to(input_dtype)
        a.free(h, fr(67))
        o = a.malloc(B * S * H * 2, 0, fr(67))              # self.weight * ...
        a.free(c, fr(67))
        return o

    def forward(S):
        """One LlamaForCausalLM forward of S positions (the prefill, or a decode step)."""
        emb = [torch_frame("nn/functional.py", 2551, "embedding"),
               torch_frame("nn/modules/sparse.py", 192, "forward")] + in_model(386)
        hidden = a.malloc(B * S * H * 2, 0, emb)
        rot = lambda line: [tf_frame(LLAMA, line, "forward")] + in_model(399)
        freqs = a.malloc(B * S * HD * 4, 0, rot(98))        # torch.cat((freqs, freqs), dim=-1)
        cos = a.malloc(B * S * HD * 2, 0, rot(103))
        sin = a.malloc(B * S * HD * 2, 0, rot(104))
        a.free(freqs, rot(104))
        for layer in range(KV_LAYERS):
            att = lambda line: [tf_frame(LLAMA, line, "forward")] + in_layer(308)
            x = rmsnorm(S, in_layer(306))
            q = a.malloc(B * S * KV_HEADS * HD * 2, 0, [linear] + att(254))
            k = a.malloc(B * S * KVH * HD * 2, 0, [linear] + att(255))
            v = a.malloc(B * S * KVH * HD * 2, 0, [linear] + att(256))
            a.free(x, att(256))
            rope = []
            for line, t in ((158, q), (159, k)):            # apply_rotary_pos_emb
                ap = [tf_frame(LLAMA, line, "apply_rotary_pos_emb")] + att(259)
                m1 = a.malloc(a.active[t].requested, 0, ap)                     # q * cos
                rh = a.malloc(a.active[t].requested, 0, [tf_frame(LLAMA, 134, "rotate_half")] + ap)
                m2 = a.malloc(a.active[t].requested, 0, ap)                     # rotate_half(q) * sin
                a.free(rh, ap)
                e = a.malloc(a.active[t].requested, 0, ap)                      # sum
                a.free(m1, ap)
                a.free(m2, ap)
                a.free(t, ap)
                rope.append(e)
            q, k = rope
            for kv, new in ((0, k), (1, v)):                 # past_key_values.update (line 263)
                up = [tf_frame("cache_utils.py", 120 + kv, "update"),
                      tf_frame("cache_utils.py", 776, "update")] + att(263)
                old = cache.get((layer, kv))
                L = old[1] if old else 0
                cat = a.malloc((L + S) * B * KVH * HD * 2, 0, up)              # torch.cat([old, new], -2)
                if old:
                    a.free(old[0], up)
                cache[(layer, kv)] = (cat, L + S)
                a.free(new, att(263))
            sdpa = [tf_frame("integrations/sdpa_attention.py", 158, "sdpa_attention_forward")] + att(268)
            o = a.malloc(B * S * KV_HEADS * HD * 2, 0, sdpa)
            a.free(q, att(268))
            proj = a.malloc(B * S * H * 2, 0, [linear] + att(280))
            a.free(o, att(280))
            res = a.malloc(B * S * H * 2, 0, in_layer(317))                       # residual + attn
            a.free(proj, in_layer(317))
            a.free(hidden, in_layer(317))
            hidden = res
            x = rmsnorm(S, in_layer(321))
            mlp = [tf_frame(LLAMA, 175, "forward")] + in_layer(322)
            gate = a.malloc(B * S * I * 2, 0, [linear] + mlp)
            act = a.malloc(B * S * I * 2, 0, [torch_frame("nn/functional.py", 2397, "silu"),
                                               tf_frame("activations.py", 103, "forward")] + mlp)
            a.free(gate, mlp)
            up = a.malloc(B * S * I * 2, 0, [linear] + mlp)
            prod = a.malloc(B * S * I * 2, 0, mlp)
            a.free(act, mlp)
            a.free(up, mlp)
            down = a.malloc(B * S * H * 2, 0, [linear] + mlp)
            a.free(prod, mlp)
            a.free(x, mlp)
            res = a.malloc(B * S * H * 2, 0, in_layer(323))                       # residual + mlp
            a.free(down, in_layer(323))
            a.free(hidden, in_layer(323))
            hidden = res
        a.free(cos, in_model(413))
        a.free(sin, in_model(413))
        x = rmsnorm(S, in_model(413))
        a.free(hidden, in_model(413))
        logits = a.malloc(B * V * 2, 0, [linear] + in_causal(480))               # lm_head(h[:, -1:])
        a.free(x, in_causal(480))
        return logits

    for step in range(1 + KV_DECODE_STEPS):
        a.tick(400)
        logits = forward(KV_PROMPT if step == 0 else 1)
        scores = a.malloc(B * V * 4, 0, in_sample(3042))     # logits[:, -1, :].to(torch.float32)
        a.free(logits, in_sample(3044))                      # del outputs
        nxt = a.malloc(B * 8, 0, in_sample(3073))            # torch.argmax(scores, dim=-1)
        a.free(scores, in_sample(3073))
        a.free(nxt, in_sample(3080))
    a.tick(1000)
    ret = [tf_frame("generation/utils.py", 2802, "generate"),
           torch_frame("utils/_contextlib.py", 124, "decorate_context")] + infer_user(("main", 41))
    for key in sorted(cache):                                # the DynamicCache goes with generate
        a.free(cache[key][0], ret)
    return a


# forward_keeps_32mib.pickle: a model whose first matmul is a Python `@` in its forward
# (as Llama's rotary embedding is), so the cuBLAS workspace (32 MiB, never freed) carries
# only model.py's forward frame; and the same forward keeps one more 32 MiB tensor every
# step in a list (a leak of exactly the workspace's size, made at another line). Only the
# first is the workspace; the five kept tensors are activations.
MODEL = "/home/user/project/model.py"


def forward_keeps_32mib():
    a = Allocator()
    init = torch_frame("nn/modules/linear.py", 106, "__init__")
    fwd = [{"name": "forward", "filename": MODEL, "line": 30}] + user(("train", 41), ("main", 75))
    keep = [{"name": "forward", "filename": MODEL, "line": 33}] + user(("train", 41), ("main", 75))
    a.malloc(16 * MiB, 0, [init] + user(("build_model", 20), ("main", 70)))
    a.malloc(32 * MiB, 0, fwd)          # the workspace, at the first matmul
    for _ in range(5):
        a.tick(1000)
        h = a.malloc(4 * MiB, 0, fwd)
        a.malloc(32 * MiB, 0, keep)     # kept: self.cache.append(x)
        a.free(h, fwd)
    return a


def main():
    write("five_entry.pickle", five_entry())
    write("multistream_accumulate.pickle", multistream_accumulate())
    write("leak_to_end.pickle", leak_to_end())
    write("graph_pool.pickle", graph_pool())
    write("spike.pickle", spike())
    write("generate_kv.pickle", generate_kv())
    write("forward_keeps_32mib.pickle", forward_keeps_32mib())
    write("twostream_loop.pickle", twostream_loop())


if __name__ == "__main__":
    main()
