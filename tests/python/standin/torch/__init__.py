"""A stand-in for the parts of `torch` that oomdoc_hook calls, for tests on machines
without PyTorch or a GPU. Signatures follow torch 2.x (torch/cuda/memory.py); the memory
figures are whatever the test scripts (`script_steps`), and every call is logged in
`calls`. `_dump_snapshot` writes a real snapshot pickle from the fixtures
(`snapshot_source`), as torch would write one."""
import shutil
import sys
import types

calls = []
observers = []
cuda_available = True
legacy_history_signature = False  # torch 2.0: _record_memory_history(enabled, ..., trace_alloc_max_entries)
has_oom_observer = True
snapshot_source = None
_steps = []  # (allocated, reserved, peak) per step, consumed by the getters
_pos = 0


def reset():
    global cuda_available, legacy_history_signature, has_oom_observer, _steps, _pos
    calls.clear()
    observers.clear()
    cuda_available = True
    legacy_history_signature = False
    has_oom_observer = True
    _steps, _pos = [], 0
    _C._cuda_attach_out_of_memory_observer = _attach


def script_steps(rows):
    global _steps, _pos
    _steps, _pos = list(rows), 0


class OutOfMemoryError(RuntimeError):
    pass


def _current():
    return _steps[min(_pos, len(_steps) - 1)] if _steps else (0, 0, 0)


def _attach(fn):
    calls.append(("attach_oom_observer",))
    observers.append(fn)


_C = types.SimpleNamespace(_cuda_attach_out_of_memory_observer=_attach)


def simulate_oom(size=2 * 1024 ** 3):
    """What the caching allocator does when it cannot allocate: observers, then raise."""
    for fn in list(observers):
        fn(0, size, 1 << 30, 1 << 20)
    raise OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB.")


cuda = types.ModuleType("torch.cuda")
cuda.OutOfMemoryError = OutOfMemoryError


def _is_available():
    return cuda_available


def _memory_allocated(device=None):
    return _current()[0]


def _memory_reserved(device=None):
    return _current()[1]


def _max_memory_allocated(device=None):
    return _current()[2]


def _reset_peak_memory_stats(device=None):
    global _pos
    calls.append(("reset_peak_memory_stats", device))
    if any(c[0] == "reset_peak_memory_stats" for c in calls[:-1]):
        _pos += 1  # after the first reset (at record start), each reset ends a step


cuda.is_available = _is_available
cuda.memory_allocated = _memory_allocated
cuda.memory_reserved = _memory_reserved
cuda.max_memory_allocated = _max_memory_allocated
cuda.reset_peak_memory_stats = _reset_peak_memory_stats

memory = types.ModuleType("torch.cuda.memory")


def _record_memory_history(*args, **kwargs):
    if legacy_history_signature:
        allowed = {"record_context", "trace_alloc_max_entries", "trace_alloc_record_context",
                   "device", "record_context_cpp"}
    else:
        allowed = {"enabled", "context", "stacks", "max_entries", "device"}
    bad = set(kwargs) - allowed
    if bad:
        raise TypeError("_record_memory_history() got an unexpected keyword argument %r" % sorted(bad)[0])
    calls.append(("record_memory_history", args, kwargs))


def _dump_snapshot(filename="dump_snapshot.pickle"):
    calls.append(("dump_snapshot", filename, _pos))
    shutil.copyfile(snapshot_source, filename)


memory._record_memory_history = _record_memory_history
memory._dump_snapshot = _dump_snapshot
cuda.memory = memory
sys.modules["torch.cuda"] = cuda
sys.modules["torch.cuda.memory"] = memory
