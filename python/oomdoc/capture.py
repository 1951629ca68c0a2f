"""Capture what oomdoc reads, from inside a PyTorch job: allocator history, a snapshot at
the moment of each out-of-memory error, and a per-step memory log.

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
    apply) and no out-of-memory observer: the snapshot is taken when the error leaves the
    block; torch 1.13's layout, which oomdoc reads.
Without torch, without CUDA or with a signature not listed above, record() warns once,
naming your line, and runs the body as it is. It never raises, and it never hides the
body's own exception: an OutOfMemoryError is re-raised untouched even when the dump fails.

Files: NAME.pickle (the snapshot of an OOM) and NAME.steps.jsonl (one line per step).
Recording re-arms after each OOM: an OOM that is caught and followed by more work (the
batch-size search of accelerate's find_executable_batch_size, a notebook cell run again)
starts the next attempt, whose files are numbered: NAME.2.pickle, NAME.2.steps.jsonl, ...
In a distributed job (world size > 1) every rank's files carry its rank, rank 0's too:
NAME.rank0.pickle, NAME.rank1.steps.jsonl; the rank comes from the trainer (callbacks),
else torch.distributed, else the launcher's environment (RANK; LOCAL_RANK with NODE_RANK,
as Lightning's launcher sets them).

The step log's peak_bytes is the step's own peak when the process's high-water mark
(max_memory_allocated) rose during it, and null when the step stayed below an earlier
one: oomdoc never resets the peak counters, which other code (the Hugging Face Trainer's
memory metrics, your own) reads. Step logs are appended to, never truncated: a resumed
run continues the step numbers of the log it finds."""
from __future__ import annotations

import functools
import inspect
import json
import os
import pickle
import sys
import warnings
from typing import Any, Callable, Dict, List, Optional, Tuple, TypeVar, Union

__all__ = ["record", "on_oom", "step", "dump", "StepLogger", "torch_support"]

PathLike = Union[str, "os.PathLike[str]"]
F = TypeVar("F", bound=Callable[..., Any])

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))
_active: Optional["_Recorder"] = None
_warned: set = set()
_ooms: Dict[str, int] = {}      # recording name -> its last attempt that dumped an OOM
_observer_for: Any = None       # the torch whose allocator calls our observer (one per process)
_ipython_hooked = False


def _user_frame() -> Any:
    """The innermost frame outside this package and the wrappers around the user's code."""
    f = sys._getframe(1)
    while f is not None:
        fn = f.f_code.co_filename
        mine = os.path.abspath(fn).startswith(_PKG_DIR + os.sep)
        if not mine and os.path.basename(fn) not in ("contextlib.py", "functools.py", "oomdoc_hook.py"):
            return f
        f = f.f_back
    return None


def _warn_once(key: str, message: str) -> None:
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


def _text(x: Any) -> str:
    """str(x), or a stand-in when its __str__ raises: an exception's message must never
    turn into a second exception inside oomdoc."""
    try:
        return str(x)
    except Exception:
        try:
            return "<%s whose str() fails>" % type(x).__name__
        except Exception:
            return "<unprintable>"


def _path(p: PathLike, what: str) -> str:
    s = os.fspath(p)
    if not isinstance(s, str):
        raise TypeError("oomdoc: %s must be a text path, not %s" % (what, type(s).__name__))
    if "\0" in s:
        raise ValueError("oomdoc: %s %r contains a NUL byte, which no file name can hold" % (what, s))
    return s


def torch_support(torch: Any = None) -> Optional[str]:
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


def _oom_error_types(torch: Any) -> Tuple[type, ...]:
    """torch.OutOfMemoryError (2.5+) and torch.cuda.OutOfMemoryError (1.13+)."""
    types: List[type] = []
    for owner in (torch, getattr(torch, "cuda", None)):
        t = getattr(owner, "OutOfMemoryError", None) if owner is not None else None
        if isinstance(t, type) and t not in types:
            types.append(t)
    return tuple(types)


def _is_oom(torch: Any, exc: Optional[BaseException]) -> bool:
    if exc is None:
        return False
    types = _oom_error_types(torch) if torch is not None else ()
    if types and isinstance(exc, types):
        return True
    # accelerate's should_reduce_batch_size reads "CUDA out of memory." the same way.
    return isinstance(exc, RuntimeError) and "out of memory" in _text(exc)


def _int(s: Optional[str]) -> Optional[int]:
    try:
        return int(s) if s not in (None, "") else None
    except (TypeError, ValueError):
        return None


def process_rank(torch: Any = None) -> Optional[str]:
    """This process's rank as it names files ("3"), or None when the job is not
    distributed (world size 1 or unknown). torch.distributed first (initialized), then the
    launcher's environment: torchrun's RANK and WORLD_SIZE; Lightning's launcher sets only
    LOCAL_RANK, NODE_RANK and WORLD_SIZE (lightning/fabric/strategies/launchers/
    subprocess_script.py), whose global rank is NODE_RANK * processes per node +
    LOCAL_RANK: without LOCAL_WORLD_SIZE a rank on another node is named
    "node{NODE_RANK}-local{LOCAL_RANK}", never one of node 0's."""
    dist = getattr(torch, "distributed", None) if torch is not None else sys.modules.get("torch.distributed")
    try:
        if dist is not None and dist.is_available() and dist.is_initialized():
            world = int(dist.get_world_size())
            return str(int(dist.get_rank())) if world > 1 else None
    except Exception:
        pass
    env = os.environ
    world = _int(env.get("WORLD_SIZE"))
    if world is None or world <= 1:
        return None
    rank = _int(env.get("RANK"))
    if rank is not None:
        return str(rank)
    local = _int(env.get("LOCAL_RANK"))
    if local is None:
        return None
    node = _int(env.get("NODE_RANK")) or _int(env.get("GROUP_RANK")) or 0
    per_node = _int(env.get("LOCAL_WORLD_SIZE"))
    if node == 0:
        return str(local)
    return str(node * per_node + local) if per_node else "node%d-local%d" % (node, local)


def _with_rank(name: str, rank: Optional[str]) -> str:
    return "%s.rank%s" % (name, rank) if rank is not None else name


def _dump_snapshot(torch: Any, path: str, device: Any = None) -> str:
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
    """Per-step memory log, the format `oomdoc trend` and `doctor` read: step,
    allocated_bytes, reserved_bytes (at the step's end) and peak_bytes (the step's peak
    when max_memory_allocated() rose during it, else null: the counters are never reset).
    path ends in .csv for CSV, else JSON Lines. It appends: an existing log (a resumed
    run) is continued, its step numbers too."""

    COLUMNS = ("step", "allocated_bytes", "reserved_bytes", "peak_bytes")

    def __init__(self, path: PathLike, device: Any = None, torch: Any = None) -> None:
        self.path = _path(path, "the step log")
        self.device = device
        self.csv = self.path.endswith(".csv")
        self.torch = torch
        self.file: Any = None
        self.count = 0
        self.next_step: Optional[int] = None
        self.high: Optional[int] = None  # max_memory_allocated() at the previous line
        if torch is not None:
            self.high = self._max_allocated(torch)

    def _max_allocated(self, torch: Any) -> Optional[int]:
        try:
            return int(torch.cuda.max_memory_allocated(self.device))
        except Exception:
            return None

    def _last_step(self) -> Optional[int]:
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

    def log(self, step: Optional[int] = None) -> Optional[Dict[str, Any]]:
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
        high = self._max_allocated(torch)
        # The high-water mark rose during this step: the new mark is the step's own peak.
        # Otherwise (or when someone reset the counters: the mark fell) it is not known.
        peak = high if high is not None and self.high is not None and high > self.high else None
        if high is not None:
            self.high = high
        row = {
            "step": self.next_step if step is None else int(step),
            "allocated_bytes": int(cuda.memory_allocated(self.device)),
            "reserved_bytes": int(cuda.memory_reserved(self.device)),
            "peak_bytes": peak,
        }
        if self.csv:
            self.file.write(",".join("" if row[c] is None else str(row[c]) for c in self.COLUMNS) + "\n")
        else:
            self.file.write(json.dumps(row) + "\n")
        self.file.flush()  # complete up to the step before a crash
        self.next_step = row["step"] + 1
        self.count += 1
        return row

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None


def _observe_oom(device: int, alloc: int, device_allocated: int, device_free: int) -> None:
    """torch's out-of-memory observer (one per process, attached once): called by the
    caching allocator at the failed allocation, before the exception unwinds and frees the
    tensors of the frames, which makes it the most faithful moment for a snapshot."""
    rec = _active
    if rec is not None and rec.enabled:
        rec.oom()


def _attach_observer(torch: Any) -> bool:
    """Attach _observe_oom once per torch (torch has no detach): True when attached."""
    global _observer_for
    if _observer_for is torch:
        return True
    attach = getattr(getattr(torch, "_C", None), "_cuda_attach_out_of_memory_observer", None)
    if attach is None:
        return False
    try:
        attach(_observe_oom)
    except Exception:
        return False
    _observer_for = torch
    return True


def _hook_ipython() -> None:
    """In IPython (Jupyter), which never calls sys.excepthook: after a cell whose error
    escaped it, stop a recording a callback began (its trainer is gone), as the
    excepthook does when a script dies."""
    global _ipython_hooked
    if _ipython_hooked or "IPython" not in sys.modules:
        return
    try:
        shell = sys.modules["IPython"].get_ipython()
        if shell is None:
            return
        shell.events.register("post_run_cell", _after_cell)
        _ipython_hooked = True
    except Exception:
        pass


def _after_cell(result: Any) -> None:
    exc = getattr(result, "error_in_exec", None)
    rec = _active
    if exc is not None and rec is not None and rec.owner is not None:
        rec.owner._stop(exc)


class _Attempt:
    """One attempt's files: NAME(.K).pickle and NAME(.K).steps.FORMAT."""

    def __init__(self, name: str, k: int, steps_format: str) -> None:
        stem = name if k == 1 else "%s.%d" % (name, k)
        self.k = k
        self.snapshot_path = stem + ".pickle"
        self.steps_path = stem + ".steps." + steps_format
        self.dumped = False


class _Recorder:
    """A recording: history on from start() to stop(); what record() and the callbacks
    hold. owner: the callback that began it (None for a with block)."""

    def __init__(self, name: PathLike, max_entries: int, stacks: str, steps_format: str,
                 device: Any, rank: Optional[str] = None, owner: Any = None) -> None:
        if steps_format not in ("jsonl", "csv"):
            raise ValueError("steps_format must be 'jsonl' or 'csv'")
        self.base = _path(name, "the recording's name")
        self.rank = rank
        self.max_entries = int(max_entries)
        self.stacks = stacks
        self.steps_format = steps_format
        self.device = device
        self.owner = owner
        self.torch: Any = None
        self.api: Optional[str] = None
        self.enabled = False
        self.on_dump: Optional[Callable[[str], None]] = None  # called with each OOM snapshot's path
        self.attempts: List[Tuple[_Attempt, int]] = []  # finished attempts and their step counts
        self.name = _with_rank(self.base, rank)
        self.attempt = _Attempt(self.name, 1, steps_format)
        self.steps = StepLogger(self.attempt.steps_path, device)

    # The current attempt's files (what a caller reads after an OOM).
    @property
    def snapshot_path(self) -> str:
        return self.attempt.snapshot_path

    @property
    def steps_path(self) -> str:
        return self.attempt.steps_path

    @property
    def step_count(self) -> int:
        return self.steps.count

    @property
    def dumped(self) -> bool:
        return self.attempt.dumped

    def start(self) -> "_Recorder":
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
                       "nothing, the block runs as usual" % (type(e).__name__, _text(e)))
            return self
        if self.rank is None:
            self.rename(process_rank(torch))
        # Numbered after this process's earlier attempts under the same name (a notebook
        # cell run again after an OOM), so that no snapshot overwrites another.
        self._begin_attempt(_ooms.get(self.name, 0) + 1)
        _attach_observer(torch)
        self.enabled = True
        return self

    def rename(self, rank: Optional[str]) -> None:
        """Name the files for rank (before any is written)."""
        self.rank = rank
        self.name = _with_rank(self.base, rank)
        self._begin_attempt(self.attempt.k)

    def _begin_attempt(self, k: int) -> None:
        self.steps.close()
        self.attempt = _Attempt(self.name, k, self.steps_format)
        self.steps = StepLogger(self.attempt.steps_path, self.device, self.torch)

    def next_attempt(self) -> None:
        """End the current attempt (its OOM was caught, or its trainer began again) and
        start the next one's files, if the current one wrote any."""
        if self.attempt.dumped or self.steps.count:
            self.attempts.append((self.attempt, self.steps.count))
            self._begin_attempt(self.attempt.k + 1)

    def oom(self) -> None:
        """An out-of-memory error happened (the observer, or one seen leaving): dump it. A
        second OOM with no step between (the next attempt failed at once) gets its own."""
        if self.attempt.dumped:
            self.next_attempt()
        self._dump_on_oom()

    def stop(self, exc: Optional[BaseException]) -> None:
        if not self.enabled:
            return
        if _is_oom(self.torch, exc) and not self.attempt.dumped:
            self._dump_on_oom()  # torch 1.13 (no observer), or the observer could not run
        self.enabled = False
        try:
            self._record_history(False)
        except Exception as e:
            _warn_once("histoff", "could not turn CUDA memory history off: %s" % _text(e))
        self.steps.close()
        self.attempts.append((self.attempt, self.steps.count))
        files: List[str] = []
        commands = []
        for a, n in self.attempts:
            wrote = ([a.snapshot_path] if a.dumped else []) + ([a.steps_path] if n else [])
            if wrote:
                files += wrote
                commands.append("  next: oomdoc doctor %s\n" % " ".join(wrote))
        if files:
            sys.stderr.write("oomdoc: wrote %s\n%s" % (", ".join(files), "".join(commands)))

    def _record_history(self, on: bool) -> None:
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

    def _dump_on_oom(self) -> None:
        """Dump for an OOM; a failure is a warning, never an exception over the user's."""
        path = self.attempt.snapshot_path
        try:
            _dump_snapshot(self.torch, path, self.device)
        except Exception as e:
            _warn_once("dumpfail", "could not dump the snapshot to %s (%s: %s); the "
                       "out-of-memory error itself follows" % (path, type(e).__name__, _text(e)))
            return
        self.attempt.dumped = True
        _ooms[self.name] = self.attempt.k
        if self.on_dump is not None:
            try:
                self.on_dump(path)
            except Exception as e:
                _warn_once("ondump", "after the dump: %s: %s" % (type(e).__name__, _text(e)))

    def dump(self, path: Optional[PathLike] = None) -> str:
        """Dump the allocator's snapshot now (not an OOM's: the attempt goes on)."""
        p = _path(path, "the snapshot path") if path is not None else self.attempt.snapshot_path
        return _dump_snapshot(self.torch, p, self.device)

    def step(self, step: Optional[int] = None) -> None:
        if not self.enabled:
            return
        if self.attempt.dumped:  # work goes on after an OOM that was caught: a new attempt
            self.next_attempt()
        self.steps.log(step)


def _signature(torch: Any) -> str:
    try:
        return str(inspect.signature(torch.cuda.memory._record_memory_history))
    except Exception:
        return "(?)"


def _begin(rec: "_Recorder") -> "_Recorder":
    """Make rec the process's recording (started); a callback's recording left over from a
    trainer that never ended (its error was caught) is stopped first."""
    global _active
    if _active is not None and _active.owner is not None and _active.owner is not rec.owner:
        _active.owner._stop(None)
    rec.start()
    _active = rec
    if rec.owner is not None:
        _hook_ipython()
    return rec


def _end(rec: "_Recorder", exc: Optional[BaseException]) -> None:
    global _active
    if _active is rec:
        _active = None
    try:
        rec.stop(exc)
    except Exception as e:  # a capture problem must never replace the body's outcome
        _warn_once("stopfail", "while stopping: %s: %s" % (type(e).__name__, _text(e)))


class record:
    """Record allocator history; dump NAME.pickle at an OOM; log steps to NAME.steps.jsonl.

    A context manager (`with oomdoc.record("run"):`) and a decorator (`@oomdoc.record("run")`).
    name: prefix of the files written (a path prefix is fine).
    max_entries: allocator events kept (a ring buffer); torch 1.13 keeps no trace.
    stacks: "python" (cheap, what oomdoc needs) or "all" (adds C++ frames, slow; 2.1+).
    steps_format: "jsonl" (default) or "csv".  device: CUDA device index (None: current).
    Inside another recording (a with block, or a callback's) it adds nothing: the outer
    one records, and step() logs there.
    """

    def __init__(self, name: PathLike = "run", max_entries: int = 200_000, stacks: str = "python",
                 steps_format: str = "jsonl", device: Any = None) -> None:
        _path(name, "the recording's name")
        if steps_format not in ("jsonl", "csv"):
            raise ValueError("steps_format must be 'jsonl' or 'csv'")
        self._args = (name, max_entries, stacks, steps_format, device)
        self._rec: Optional[_Recorder] = None
        self._nested = False

    def __enter__(self) -> "_Recorder":
        if _active is not None:
            _warn_once("nested", "record() inside another recording (%s): that one records"
                       % _active.name)
            self._nested = True
            return _active
        self._rec = _begin(_Recorder(*self._args))
        return self._rec

    def __exit__(self, exc_type: Any, exc: Optional[BaseException], tb: Any) -> bool:
        if self._nested:
            self._nested = False
            return False
        if self._rec is not None:
            rec, self._rec = self._rec, None
            _end(rec, exc)
        return False  # never swallow the exception

    def __call__(self, fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with record(*self._args):
                return fn(*args, **kwargs)
        return wrapper  # type: ignore[return-value]


class on_oom:
    """Dump a snapshot to path when an out-of-memory error escapes the block or the
    decorated function (it is re-raised untouched, whatever happens here). What the
    snapshot holds is whatever history is on (record() turns it on); without CUDA it does
    nothing. In a distributed job the path carries the rank (oom.rank3.pickle)."""

    def __init__(self, path: PathLike = "oom.pickle", device: Any = None) -> None:
        self.path = _path(path, "on_oom's path")
        self.device = device

    def __enter__(self) -> "on_oom":
        return self

    def __exit__(self, exc_type: Any, exc: Optional[BaseException], tb: Any) -> bool:
        if exc is None:
            return False
        try:
            torch = sys.modules.get("torch")
            if torch is not None and _is_oom(torch, exc):
                stem, ext = os.path.splitext(self.path)
                path = _dump_snapshot(torch, _with_rank(stem, process_rank(torch)) + ext, self.device)
                sys.stderr.write("oomdoc: out of memory: wrote %s\n  next: oomdoc doctor %s\n" % (path, path))
        except Exception as e:
            _warn_once("oomdumpfail", "could not dump the snapshot to %s (%s: %s); the "
                       "out-of-memory error itself follows" % (self.path, type(e).__name__, _text(e)))
        return False

    def __call__(self, fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with on_oom(self.path, self.device):
                return fn(*args, **kwargs)
        return wrapper  # type: ignore[return-value]


def step(step: Optional[int] = None) -> None:
    """Append one line to the active recording's step log: call once per step, after it."""
    if _active is None:
        _warn_once("nostep", "step() called outside oomdoc.record(): ignored")
        return
    _active.step(step)


def dump(path: Optional[PathLike] = None) -> Optional[str]:
    """Dump the allocator snapshot now (default: the recording's NAME.pickle); returns the
    path, or None outside a recording (or without CUDA)."""
    if _active is None or not _active.enabled:
        return None
    return _active.dump(path)
