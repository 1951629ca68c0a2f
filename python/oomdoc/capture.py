"""Capture what oomdoc reads, from inside a PyTorch job: allocator history, a snapshot at
the moment of an out-of-memory error, and a per-step memory log.

    with oomdoc.record("run", max_entries=200_000):      # or @oomdoc.record("run")
        for batch in loader:
            train_step(batch)
            oomdoc.step()                                # one line in run.steps.jsonl

Supported torch releases (torch.cuda.memory._record_memory_history's signature decides,
read with inspect, never guessed from a failed call):
  * 2.1 and later: (enabled="all", context="all", stacks="all", max_entries=..., device)
    and _dump_snapshot(path); the out-of-memory observer dumps at the failed allocation.
  * 2.0: (enabled, record_context=True, trace_alloc_max_entries=1,
    trace_alloc_record_context=False, device=None); no _dump_snapshot: the snapshot is
    pickle.dump(_snapshot()), as 2.1's _dump_snapshot does.
  * 1.13: (enabled, device=None): block histories only, no trace (max_entries does not
    apply); the snapshot is pickle.dump(_snapshot()), torch 1.13's layout, which oomdoc
    reads.
Without torch, without CUDA or with a signature not listed above, record() warns once,
naming your line, and runs the body as it is. It never raises, and it never hides the
body's own exception: an OutOfMemoryError is re-raised untouched even when the dump fails.

Step logs are appended to, never truncated: a resumed run continues the step numbers of
the log it finds. Under torchrun each rank writes its own files (run.rank1.pickle, ...)."""
import functools
import inspect
import json
import os
import pickle
import sys
import warnings

__all__ = ["record", "on_oom", "step", "dump", "StepLogger", "torch_support"]

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))
_active = None
_warned = set()


def _user_frame():
    """The innermost frame outside this package and the wrappers around the user's code."""
    f = sys._getframe(1)
    while f is not None:
        fn = f.f_code.co_filename
        mine = os.path.abspath(fn).startswith(_PKG_DIR + os.sep)
        if not mine and os.path.basename(fn) not in ("contextlib.py", "functools.py", "oomdoc_hook.py"):
            return f
        f = f.f_back
    return None


def _warn_once(key, message):
    """warnings.warn, once per key, attributed to the user's line (not this package's)."""
    if key in _warned:
        return
    _warned.add(key)
    f = _user_frame()
    if f is None:
        warnings.warn("oomdoc: " + message, RuntimeWarning, stacklevel=2)
        return
    registry = f.f_globals.setdefault("__warningregistry__", {})
    warnings.warn_explicit("oomdoc: " + message, RuntimeWarning, f.f_code.co_filename,
                           f.f_lineno, module=f.f_globals.get("__name__"), registry=registry)


def torch_support(torch=None):
    """Which capture API this torch offers: '2.1' (2.1 and later), '2.0', '1.13', or None
    (no torch, or a _record_memory_history signature oomdoc does not know)."""
    if torch is None:
        try:
            import torch
        except ImportError:
            return None
    fn = getattr(getattr(getattr(torch, "cuda", None), "memory", None), "_record_memory_history", None)
    if fn is None:
        return None
    try:
        params = set(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return None
    if {"enabled", "max_entries", "stacks"} <= params:
        return "2.1"
    if {"enabled", "trace_alloc_max_entries"} <= params:
        return "2.0"
    if "enabled" in params and params <= {"enabled", "device"}:
        return "1.13"
    return None


def _oom_error_types(torch):
    """torch.OutOfMemoryError (2.5+) and torch.cuda.OutOfMemoryError (1.13+)."""
    types = []
    for owner in (torch, getattr(torch, "cuda", None)):
        t = getattr(owner, "OutOfMemoryError", None) if owner is not None else None
        if isinstance(t, type) and t not in types:
            types.append(t)
    return tuple(types)


def _is_oom(torch, exc):
    types = _oom_error_types(torch) if torch is not None else ()
    return exc is not None and ((types and isinstance(exc, types))
                                or (isinstance(exc, RuntimeError) and "out of memory" in str(exc)))


def _rank_name(name):
    rank, world = os.environ.get("RANK"), os.environ.get("WORLD_SIZE")
    if rank is not None and world not in (None, "", "1"):
        return "%s.rank%s" % (name, rank)
    return name


def _dump_snapshot(torch, path, device=None):
    """torch 2.1+: _dump_snapshot; 2.0 and 1.13: pickle _snapshot() as 2.1 does."""
    mem = torch.cuda.memory
    if hasattr(mem, "_dump_snapshot"):
        mem._dump_snapshot(path)
    else:
        snap = mem._snapshot(device) if device is not None else mem._snapshot()
        with open(path, "wb") as f:
            pickle.dump(snap, f)
    return path


class StepLogger:
    """Per-step memory log (step, allocated_bytes, reserved_bytes, peak_bytes; peak:
    max_memory_allocated() since the previous line), the format `oomdoc trend` reads.
    path ends in .csv for CSV, else JSON Lines. It appends: an existing log (a resumed
    run) is continued, its step numbers too."""

    COLUMNS = ("step", "allocated_bytes", "reserved_bytes", "peak_bytes")

    def __init__(self, path, device=None, torch=None):
        self.path = os.fspath(path)
        self.device = device
        self.csv = path.endswith(".csv")
        self.torch = torch
        self.file = None
        self.count = 0
        self.next_step = None

    def _last_step(self):
        try:
            with open(self.path, "rb") as f:
                f.seek(0, 2)
                f.seek(max(0, f.tell() - 4096))
                lines = [x for x in f.read().decode("utf-8", "replace").splitlines() if x.strip()]
        except OSError:
            return None
        if not lines:
            return None
        last = lines[-1]
        try:
            return int(last.split(",")[0]) if self.csv else int(json.loads(last)["step"])
        except (ValueError, KeyError, TypeError):
            return None

    def log(self, step=None):
        """Append one line for the step just done; returns the row (None without CUDA,
        which is warned about once)."""
        torch = self.torch
        if torch is None:
            try:
                import torch
                cuda_ok = torch.cuda.is_available()
            except Exception:
                cuda_ok = False
            if not cuda_ok:
                _warn_once("steps-nocuda", "StepLogger: CUDA is not available: logging nothing")
                return None
            self.torch = torch
        if self.file is None:
            last = self._last_step()
            self.next_step = 0 if last is None else last + 1
            new = not os.path.exists(self.path) or os.path.getsize(self.path) == 0
            self.file = open(self.path, "a")
            if self.csv and new:
                self.file.write(",".join(self.COLUMNS) + "\n")
        cuda = torch.cuda
        row = {
            "step": self.next_step if step is None else int(step),
            "allocated_bytes": int(cuda.memory_allocated(self.device)),
            "reserved_bytes": int(cuda.memory_reserved(self.device)),
            "peak_bytes": int(cuda.max_memory_allocated(self.device)),
        }
        cuda.reset_peak_memory_stats(self.device)
        if self.csv:
            self.file.write(",".join(str(row[c]) for c in self.COLUMNS) + "\n")
        else:
            self.file.write(json.dumps(row) + "\n")
        self.file.flush()  # complete up to the step before a crash
        self.next_step = row["step"] + 1
        self.count += 1
        return row

    def close(self):
        if self.file is not None:
            self.file.close()
            self.file = None


class _Recorder:
    def __init__(self, name, max_entries, stacks, steps_format, device):
        if steps_format not in ("jsonl", "csv"):
            raise ValueError("steps_format must be 'jsonl' or 'csv'")
        name = _rank_name(os.fspath(name))
        self.name = name
        self.snapshot_path = name + ".pickle"
        self.steps_path = name + ".steps." + steps_format
        self.max_entries = int(max_entries)
        self.stacks = stacks
        self.device = device
        self.torch = None
        self.api = None
        self.enabled = False
        self.steps = StepLogger(self.steps_path, device)
        self.dumped = False
        self.observer_armed = False
        self.on_dump = None  # called with the path after the OOM snapshot is written

    @property
    def step_count(self):
        return self.steps.count

    def start(self):
        try:
            import torch
        except ImportError:
            _warn_once("notorch", "torch is not importable, so there is no CUDA memory history "
                       "to record: recording nothing, the block runs as usual")
            return self
        self.torch = torch
        try:
            cuda_ok = torch.cuda.is_available()
        except Exception:
            cuda_ok = False
        if not cuda_ok:
            _warn_once("nocuda", "CUDA is not available (torch %s sees no GPU): recording "
                       "nothing, the block runs as usual" % getattr(torch, "__version__", "?"))
            return self
        self.api = torch_support(torch)
        if self.api is None:
            _warn_once("nosig", "torch %s's _record_memory_history%s is not a signature oomdoc "
                       "knows (torch 1.13 to 2.x): recording nothing, the block runs as usual"
                       % (getattr(torch, "__version__", "?"), _signature(torch)))
            return self
        try:
            self._record_history(True)
        except Exception as e:
            _warn_once("histfail", "could not turn on CUDA memory history (%s: %s): recording "
                       "nothing, the block runs as usual" % (type(e).__name__, e))
            return self
        self._attach_observer()
        try:
            torch.cuda.reset_peak_memory_stats(self.device)
        except Exception:
            pass
        self.steps.torch = torch
        self.enabled = True
        return self

    def stop(self, exc):
        if not self.enabled:
            return
        self.observer_armed = False  # torch has no detach: the closure checks this flag
        if _is_oom(self.torch, exc) and not self.dumped:
            self._dump_on_oom()
        try:
            self._record_history(False)
        except Exception as e:
            _warn_once("histoff", "could not turn CUDA memory history off: %s" % e)
        self.steps.close()
        self.steps.torch = None
        self.enabled = False
        wrote = [p for p in (self.snapshot_path if self.dumped else None,
                             self.steps_path if self.step_count else None) if p]
        if wrote:
            sys.stderr.write("oomdoc: wrote %s\n  next: oomdoc doctor %s\n"
                             % (", ".join(wrote), " ".join(wrote)))

    def _record_history(self, on):
        fn = self.torch.cuda.memory._record_memory_history
        if self.api == "2.1":
            if on:
                fn(enabled="all", context="all", stacks=self.stacks, max_entries=self.max_entries,
                   device=self.device)
            else:
                fn(enabled=None, device=self.device)
        elif self.api == "2.0":
            if on:
                fn(True, trace_alloc_max_entries=self.max_entries, trace_alloc_record_context=True,
                   device=self.device)
            else:
                fn(False, device=self.device)
        else:  # 1.13
            fn(bool(on), device=self.device)

    def _attach_observer(self):
        attach = getattr(getattr(self.torch, "_C", None), "_cuda_attach_out_of_memory_observer", None)
        if attach is None:
            return
        me = self

        def observer(device, alloc, device_alloc, device_free):
            # Called by the allocator at the failed allocation, before the exception
            # unwinds and frees the tensors of the frames: the most faithful snapshot.
            if me.observer_armed and not me.dumped:
                me._dump_on_oom()

        try:
            attach(observer)
            self.observer_armed = True
        except Exception:
            pass

    def _dump_on_oom(self):
        """Dump for an OOM; a failure is a warning, never an exception over the user's."""
        try:
            self.dump()
        except Exception as e:
            _warn_once("dumpfail", "could not dump the snapshot to %s (%s: %s); the "
                       "out-of-memory error itself follows" % (self.snapshot_path, type(e).__name__, e))
            return
        if self.on_dump is not None:
            try:
                self.on_dump(self.snapshot_path)
            except Exception as e:
                _warn_once("ondump", "after the dump: %s: %s" % (type(e).__name__, e))

    def dump(self, path=None):
        path = os.fspath(path or self.snapshot_path)
        _dump_snapshot(self.torch, path, self.device)
        if path == self.snapshot_path:
            self.dumped = True
        return path

    def step(self, step=None):
        if self.enabled:
            self.steps.log(step)


def _signature(torch):
    try:
        return str(inspect.signature(torch.cuda.memory._record_memory_history))
    except Exception:
        return "(?)"


class record:
    """Record allocator history; dump NAME.pickle at an OOM; log steps to NAME.steps.jsonl.

    A context manager (`with oomdoc.record("run"):`) and a decorator (`@oomdoc.record("run")`).
    name: prefix of the files written (a path prefix is fine).
    max_entries: allocator events kept (a ring buffer); torch 1.13 keeps no trace.
    stacks: "python" (cheap, what oomdoc needs) or "all" (adds C++ frames, slow; 2.1+).
    steps_format: "jsonl" (default) or "csv".  device: CUDA device index (None: current).
    """

    def __init__(self, name="run", max_entries=200_000, stacks="python", steps_format="jsonl",
                 device=None):
        self._args = (name, max_entries, stacks, steps_format, device)
        self._rec = None
        self._nested = False

    def __enter__(self):
        global _active
        self._rec = _Recorder(*self._args)
        if _active is not None:
            _warn_once("nested", "record() inside another record(): the outer one records")
            self._nested = True
            return _active
        self._rec.start()
        _active = self._rec
        return self._rec

    def __exit__(self, exc_type, exc, tb):
        global _active
        if self._nested:
            self._nested = False
            return False
        _active = None
        try:
            self._rec.stop(exc)
        except Exception as e:  # a capture problem must never replace the body's outcome
            _warn_once("stopfail", "while stopping: %s: %s" % (type(e).__name__, e))
        return False  # never swallow the exception

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with record(*self._args):
                return fn(*args, **kwargs)
        return wrapper


class on_oom:
    """Dump a snapshot to path when an out-of-memory error escapes the block or the
    decorated function (it is re-raised untouched). What the snapshot holds is whatever
    history is on (record() turns it on); without CUDA it does nothing."""

    def __init__(self, path="oom.pickle", device=None):
        self.path = os.fspath(path)
        self.device = device

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc is None:
            return False
        torch = sys.modules.get("torch")
        if torch is not None and _is_oom(torch, exc):
            try:
                stem, ext = os.path.splitext(self.path)
                path = _dump_snapshot(torch, _rank_name(stem) + ext, self.device)
                sys.stderr.write("oomdoc: out of memory: wrote %s\n  next: oomdoc doctor %s\n"
                                 % (path, path))
            except Exception as e:
                _warn_once("oomdumpfail", "could not dump the snapshot to %s (%s: %s); the "
                           "out-of-memory error itself follows" % (self.path, type(e).__name__, e))
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with on_oom(self.path, self.device):
                return fn(*args, **kwargs)
        return wrapper


def step(step=None):
    """Append one line to the active record()'s step log: call once per step, after it."""
    if _active is None:
        _warn_once("nostep", "step() called outside oomdoc.record(): ignored")
        return
    _active.step(step)


def dump(path=None):
    """Dump the allocator snapshot now (default: NAME.pickle); returns the path or None."""
    if _active is None or not _active.enabled:
        return None
    return _active.dump(path)
