"""A stand-in for the parts of `torch` that oomdoc's capture code calls, for tests on
machines without PyTorch or a GPU. `use_version("2.1" | "2.0" | "1.13")` installs that
release's signatures (torch/cuda/memory.py of each): 2.1+ _record_memory_history(enabled,
context, stacks, max_entries, device) and _dump_snapshot; 2.0 (enabled, record_context,
trace_alloc_max_entries, trace_alloc_record_context, device) and no _dump_snapshot;
1.13 (enabled, device) and no _dump_snapshot nor OOM observer. The memory figures are
what the test scripts: `script_steps(rows)` gives each step's (allocated, reserved, peak)
and `run_step()` runs the next one, after which memory_allocated/memory_reserved read its
row and max_memory_allocated the highest peak since the last reset_peak_memory_stats(),
as the caching allocator keeps them. Every call is logged in `calls`. `_dump_snapshot`
writes a real snapshot pickle from the fixtures (`snapshot_source`), as torch would
write one; `_snapshot()` returns that pickle's dict. `distributed` answers as an
initialized process group of `dist_world` ranks when `dist_rank` is set."""
import inspect
import pickle
import shutil
import sys
import types

calls = []
observers = []
cuda_available = True
snapshot_source = None
dist_rank = None
dist_world = 1
_steps = []  # (allocated, reserved, peak) per step
_pos = -1    # the step last run (-1: none yet)
_max = 0     # max_memory_allocated(): the highest peak since the last reset


def reset(version="2.1"):
    global cuda_available, dump_fails, dist_rank, dist_world
    calls.clear()
    observers.clear()
    cuda_available = True
    dump_fails = False
    dist_rank, dist_world = None, 1
    script_steps([])
    use_version(version)


def script_steps(rows):
    global _steps, _pos, _max
    _steps, _pos, _max = list(rows), -1, 0


def run_step():
    """The next scripted step happens: its memory becomes current, its peak counts."""
    global _pos, _max
    _pos = min(_pos + 1, len(_steps) - 1)
    _max = max(_max, _current()[2])


class OutOfMemoryError(RuntimeError):
    pass


def _current():
    return _steps[_pos] if _steps and _pos >= 0 else (0, 0, 0)


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
    return _max


def _reset_peak_memory_stats(device=None):
    global _max
    calls.append(("reset_peak_memory_stats", device))
    _max = _current()[0]  # what the allocator does: the peak restarts from what is live


def _empty_cache():
    calls.append(("empty_cache",))


cuda.is_available = _is_available
cuda.empty_cache = _empty_cache
cuda.memory_allocated = _memory_allocated
cuda.memory_reserved = _memory_reserved
cuda.max_memory_allocated = _max_memory_allocated
cuda.reset_peak_memory_stats = _reset_peak_memory_stats

memory = types.ModuleType("torch.cuda.memory")


def _sig_2_1(enabled="all", context="all", stacks="all", max_entries=2 ** 63 - 1, device=None):
    pass


def _sig_2_0(enabled, record_context=True, trace_alloc_max_entries=1,
             trace_alloc_record_context=False, device=None):
    pass


def _sig_1_13(enabled, device=None):
    pass


def _history(template):
    """_record_memory_history with template's signature: binds as torch would (TypeError
    on a keyword that release lacks) and logs the call as it was made."""
    sig = inspect.signature(template)

    def fn(*args, **kwargs):
        sig.bind(*args, **kwargs)
        calls.append(("record_memory_history", args, kwargs))
    fn.__signature__ = sig
    return fn


def _dump_snapshot(filename="dump_snapshot.pickle"):
    calls.append(("dump_snapshot", filename, _pos))
    if dump_fails:
        raise RuntimeError("dump failed (stand-in)")
    shutil.copyfile(snapshot_source, filename)


def _snapshot(device=None):
    calls.append(("snapshot", device, _pos))
    if dump_fails:
        raise RuntimeError("snapshot failed (stand-in)")
    with open(snapshot_source, "rb") as f:
        return pickle.load(f)


memory._snapshot = _snapshot
dump_fails = False
__version__ = "2.5.1"
_is_oomdoc_standin = True


def use_version(v):
    """Install torch release v's capture API (see the module's docstring)."""
    global __version__
    for name in ("_record_memory_history", "_dump_snapshot"):
        if hasattr(memory, name):
            delattr(memory, name)
    if hasattr(_C, "_cuda_attach_out_of_memory_observer"):
        del _C._cuda_attach_out_of_memory_observer
    if v == "2.1":
        memory._record_memory_history = _history(_sig_2_1)
        memory._dump_snapshot = _dump_snapshot
        _C._cuda_attach_out_of_memory_observer = _attach
        __version__ = "2.5.1"
    elif v == "2.0":
        memory._record_memory_history = _history(_sig_2_0)
        _C._cuda_attach_out_of_memory_observer = _attach
        __version__ = "2.0.1"
    elif v == "1.13":
        memory._record_memory_history = _history(_sig_1_13)
        __version__ = "1.13.1"
    else:
        raise ValueError(v)


distributed = types.ModuleType("torch.distributed")
distributed.is_available = lambda: True
distributed.is_initialized = lambda: dist_rank is not None
distributed.get_rank = lambda group=None: dist_rank
distributed.get_world_size = lambda group=None: dist_world

use_version("2.1")
cuda.memory = memory
sys.modules["torch.cuda"] = cuda
sys.modules["torch.cuda.memory"] = memory
sys.modules["torch.distributed"] = distributed
