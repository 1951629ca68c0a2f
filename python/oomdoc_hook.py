"""oomdoc_hook - record what `oomdoc doctor` needs, from inside a PyTorch training script.

One file, standard library and torch only; nothing to install. Either put this directory
on the path (PYTHONPATH=/path/to/oomdoc/python python train.py) or copy the file next to
your script. Then:

    import oomdoc_hook

    with oomdoc_hook.record("run", max_entries=200_000):
        for batch in loader:
            train_step(batch)
            oomdoc_hook.step()          # one line per step in run.steps.jsonl

What it does inside the `with` block:
  * turns on PyTorch's allocator history
    (torch.cuda.memory._record_memory_history(stacks="python", max_entries=...));
  * when CUDA runs out of memory, dumps the snapshot to run.pickle at that moment (through
    torch's out-of-memory observer where this torch has one), and in any case when a
    torch.OutOfMemoryError leaves the block (the error is re-raised, untouched);
  * oomdoc_hook.step() appends {"step", "allocated_bytes", "reserved_bytes", "peak_bytes"}
    to run.steps.jsonl (peak: max_memory_allocated() since the previous step) - the per-step
    log `oomdoc trend` and `oomdoc doctor` read;
  * at the end of the block it prints the `oomdoc doctor ...` command to run.

Without CUDA it warns once and does nothing else. It never changes training results: it
only reads memory statistics, resets the peak counter between steps, and records history
(which costs some speed and host memory: lower max_entries if that matters).
Under torchrun, each rank writes its own files (run.rank1.pickle, ...).
"""

import json
import os
import sys
import warnings

__all__ = ["record", "step", "dump"]

_active = None
_warned = set()


def _warn_once(key, message):
    if key not in _warned:
        _warned.add(key)
        warnings.warn("oomdoc_hook: " + message, RuntimeWarning, stacklevel=3)


def _oom_error_types(torch):
    """torch.OutOfMemoryError (2.5+) and torch.cuda.OutOfMemoryError (1.13+)."""
    types = []
    for owner in (torch, getattr(torch, "cuda", None)):
        t = getattr(owner, "OutOfMemoryError", None) if owner is not None else None
        if isinstance(t, type) and t not in types:
            types.append(t)
    return tuple(types)


class _Recorder:
    def __init__(self, name, max_entries, stacks, steps_format, device):
        if steps_format not in ("jsonl", "csv"):
            raise ValueError("steps_format must be 'jsonl' or 'csv'")
        rank, world = os.environ.get("RANK"), os.environ.get("WORLD_SIZE")
        if rank is not None and world not in (None, "", "1"):
            name = "%s.rank%s" % (name, rank)
        self.name = name
        self.snapshot_path = name + ".pickle"
        self.steps_path = name + ".steps." + steps_format
        self.max_entries = int(max_entries)
        self.stacks = stacks
        self.steps_format = steps_format
        self.device = device
        self.torch = None
        self.enabled = False
        self.steps_file = None
        self.step_count = 0
        self.dumped = False
        self.observer_armed = False

    # -- lifecycle ------------------------------------------------------------------------
    def start(self):
        try:
            import torch
        except ImportError:
            _warn_once("notorch", "torch is not importable: recording nothing")
            return self
        self.torch = torch
        if not torch.cuda.is_available():
            _warn_once("nocuda", "CUDA is not available: recording nothing")
            return self
        self._record_history(True)
        self._attach_observer()
        torch.cuda.reset_peak_memory_stats(self.device)
        self.enabled = True
        return self

    def stop(self, exc):
        if not self.enabled:
            return
        torch = self.torch
        oom_types = _oom_error_types(torch)
        if exc is not None and oom_types and isinstance(exc, oom_types) and not self.dumped:
            self.dump()
        self.observer_armed = False  # torch has no detach: the closure checks this flag
        try:
            self._record_history(False)
        finally:
            if self.steps_file is not None:
                self.steps_file.close()
                self.steps_file = None
            self.enabled = False
        wrote = [p for p in (self.snapshot_path if self.dumped else None,
                             self.steps_path if self.step_count else None) if p]
        if wrote:
            sys.stderr.write("oomdoc_hook: wrote %s\n  next: oomdoc doctor %s\n"
                             % (", ".join(wrote), " ".join(wrote)))

    # -- torch calls, across versions -------------------------------------------------------
    def _record_history(self, on):
        mem = self.torch.cuda.memory
        try:
            if on:
                mem._record_memory_history(enabled="all", context="all", stacks=self.stacks,
                                           max_entries=self.max_entries, device=self.device)
            else:
                mem._record_memory_history(enabled=None, device=self.device)
        except TypeError:
            # torch 2.0's signature: (enabled, record_context, trace_alloc_max_entries, ...)
            if on:
                mem._record_memory_history(True, trace_alloc_max_entries=self.max_entries,
                                           trace_alloc_record_context=True, device=self.device)
            else:
                mem._record_memory_history(False, device=self.device)

    def _attach_observer(self):
        attach = getattr(getattr(self.torch, "_C", None), "_cuda_attach_out_of_memory_observer", None)
        if attach is None:
            return
        me = self

        def observer(device, alloc, device_alloc, device_free):
            # Called by the allocator at the failed allocation, before the exception
            # unwinds and frees the tensors of the frames: the most faithful snapshot.
            if me.observer_armed and not me.dumped:
                try:
                    me.dump()
                except Exception as e:  # never turn an OOM into another error
                    _warn_once("dumpfail", "could not dump the snapshot: %s" % e)

        attach(observer)
        self.observer_armed = True

    # -- what the user calls -----------------------------------------------------------------
    def dump(self, path=None):
        path = path or self.snapshot_path
        self.torch.cuda.memory._dump_snapshot(path)
        if path == self.snapshot_path:
            self.dumped = True
        return path

    def step(self, step=None):
        if not self.enabled:
            return
        cuda = self.torch.cuda
        row = {
            "step": self.step_count if step is None else int(step),
            "allocated_bytes": int(cuda.memory_allocated(self.device)),
            "reserved_bytes": int(cuda.memory_reserved(self.device)),
            "peak_bytes": int(cuda.max_memory_allocated(self.device)),
        }
        cuda.reset_peak_memory_stats(self.device)
        if self.steps_file is None:
            self.steps_file = open(self.steps_path, "w")
            if self.steps_format == "csv":
                self.steps_file.write("step,allocated_bytes,reserved_bytes,peak_bytes\n")
        if self.steps_format == "csv":
            line = "%d,%d,%d,%d\n" % (row["step"], row["allocated_bytes"], row["reserved_bytes"],
                                      row["peak_bytes"])
        else:
            line = json.dumps(row) + "\n"
        self.steps_file.write(line)
        self.steps_file.flush()  # complete up to the step before a crash
        self.step_count += 1


class record:
    """Context manager: with oomdoc_hook.record("run", max_entries=200_000): train().

    name: prefix of the files written (a path prefix is fine): NAME.pickle, NAME.steps.jsonl.
    max_entries: allocator events kept (a ring buffer): more covers a longer stretch.
    stacks: "python" (cheap, what oomdoc needs) or "all" (adds C++ frames, slow).
    steps_format: "jsonl" (default) or "csv".
    device: CUDA device index (None: the current device).
    """

    def __init__(self, name="run", max_entries=200_000, stacks="python", steps_format="jsonl",
                 device=None):
        self._rec = _Recorder(name, max_entries, stacks, steps_format, device)

    def __enter__(self):
        global _active
        if _active is not None:
            raise RuntimeError("oomdoc_hook.record is already active")
        self._rec.start()
        _active = self._rec
        return self._rec

    def __exit__(self, exc_type, exc, tb):
        global _active
        _active = None
        self._rec.stop(exc)
        return False  # never swallow the exception


def step(step=None):
    """Append one line to the step log: call once per training step, after it."""
    if _active is None:
        _warn_once("nostep", "step() called outside oomdoc_hook.record(): ignored")
        return
    _active.step(step)


def dump(path=None):
    """Dump the allocator snapshot now (default: NAME.pickle); returns the path or None."""
    if _active is None or not _active.enabled:
        return None
    return _active.dump(path)
