"""Callbacks for training frameworks: record allocator history, log per-step memory, and
at each out-of-memory error write the snapshot and print oomdoc doctor's verdict.

    trainer = transformers.Trainer(..., callbacks=[oomdoc.integrations.HFTrainerCallback("run")])
    trainer = lightning.pytorch.Trainer(callbacks=[oomdoc.integrations.LightningCallback("run")])

Each is one class, importable and picklable (DDP-spawn launchers and hyperparameter
searches pickle or copy the callbacks; a copy starts with nothing recorded). The class is
made on first use of its name: it subclasses the framework's base class (transformers'
TrainerCallback; Lightning's Callback from lightning.pytorch, else pytorch_lightning) when
that framework can be imported, so isinstance checks and the Trainer's own bookkeeping
work; without it, it is duck-typed (every hook it does not use is a no-op).

Hugging Face Trainer: recording runs from on_train_begin to on_train_end. The Trainer has
no exception hook: the snapshot is written by torch's out-of-memory observer at the failed
allocation (torch 2.0+), or, on torch 1.13, when the error ends the script
(sys.excepthook) or the notebook cell (IPython's post_run_cell), which also stop the
recording. Under auto_find_batch_size accelerate catches the OOM and begins training again
at half the batch: each attempt gets its own numbered files (run.pickle, run.2.pickle;
torch 1.13 has no observer, so there only the step logs are kept).

Lightning: recording runs from setup to teardown of every stage (fit with its sanity
check, validate, test, predict); on_exception writes the snapshot of an OOM (if the
observer has not) and stops, as Lightning's _interrupt calls it before re-raising.

Ranks: from the trainer (trainer.global_rank and world_size; the Trainer's
args.process_index and world_size), else torch.distributed, else the environment
(capture.process_rank): every rank's files are named the same way, run.rank0.pickle, ..."""
from __future__ import annotations

import importlib
import sys
from typing import Any, Dict, Optional, Sequence, Tuple

from . import capture

__all__ = ["HFTrainerCallback", "LightningCallback"]


def _noop(*args: Any, **kwargs: Any) -> None:
    return None


class _Callback:
    """What both callbacks do; the framework's hooks call _start, _step and _stop."""

    def __init__(self, name: capture.PathLike = "run", max_entries: int = 200_000,
                 stacks: str = "python", steps_format: str = "jsonl", device: Any = None,
                 doctor: bool = True, out: Any = None) -> None:
        capture._path(name, "the recording's name")
        self.name = name
        self.record_args = (name, max_entries, stacks, steps_format, device)
        self.run_doctor = doctor
        self.out = out  # where the verdict is printed (default: sys.stderr)
        self.recorder: Optional[capture._Recorder] = None
        self.verdict: Any = None  # the doctor Result after the last OOM
        self._nested = False
        self._prev_hook: Any = None

    def __getattr__(self, name: str) -> Any:
        # Hooks this callback does not define (duck-typed: transformers calls every on_*
        # event of every callback; Lightning looks its hooks up by name).
        if name.startswith("on_"):
            return _noop
        raise AttributeError(name)

    # A copy (pickle, copy.deepcopy) carries the settings, never a recording in progress.
    def __getstate__(self) -> Dict[str, Any]:
        out = self.out if self.out in (None, sys.stderr, sys.stdout) else None
        return {"record_args": self.record_args, "run_doctor": self.run_doctor,
                "to_stdout": out is sys.stdout}

    def __setstate__(self, state: Dict[str, Any]) -> None:
        name, max_entries, stacks, steps_format, device = state["record_args"]
        _Callback.__init__(self, name, max_entries, stacks, steps_format, device,
                           state["run_doctor"], sys.stdout if state.get("to_stdout") else None)

    # -- shared behaviour ------------------------------------------------------------------
    def _start(self, rank: Optional[str], stage: Optional[str] = None) -> None:
        """Begin recording (stage: a suffix of the files' name); when this callback already
        records (the trainer began again without ending: auto_find_batch_size's next
        attempt), start the next attempt."""
        active = capture._active
        if self.recorder is not None and active is self.recorder:
            self.recorder.next_attempt()
            return
        if active is not None and active.owner is None:
            self.recorder, self._nested = active, True  # inside a `with oomdoc.record()`
            return
        name, *rest = self.record_args
        if stage:
            name = "%s.%s" % (capture._path(name, "the recording's name"), stage)
        rec = capture._Recorder(name, *rest, rank=rank, owner=self)
        rec.on_dump = lambda path: self._after_dump(rec, path)
        self.recorder, self._nested = capture._begin(rec), False
        if rec.enabled and sys.excepthook is not self._excepthook:
            self._prev_hook = sys.excepthook  # an OOM that ends the script: dump, stop
            sys.excepthook = self._excepthook

    def _step(self, step: Optional[int]) -> None:
        if self.recorder is not None:
            self.recorder.step(step)

    def _stop(self, exc: Optional[BaseException] = None) -> None:
        rec, self.recorder = self.recorder, None
        if self._prev_hook is not None and sys.excepthook == self._excepthook:
            sys.excepthook = self._prev_hook
        self._prev_hook = None
        if rec is None or self._nested:
            self._nested = False
            return
        capture._end(rec, exc)

    def _excepthook(self, etype: Any, value: Any, tb: Any) -> None:
        hook = self._prev_hook or sys.__excepthook__
        try:
            self._stop(value)
        finally:
            hook(etype, value, tb)

    def _after_dump(self, rec: capture._Recorder, path: str) -> None:
        """An OOM's snapshot is written: run doctor on it (and its attempt's step log)
        and print the verdict."""
        if not self.run_doctor:
            return
        from . import api
        inputs = [path]
        if rec.step_count:
            inputs.append(rec.steps_path)
        out = self.out or sys.stderr
        try:
            self.verdict = api.doctor(*inputs)
            out.write("oomdoc: out of memory: the diagnosis of %s\n%r\n" % (" ".join(inputs), self.verdict))
        except Exception as e:
            out.write("oomdoc: wrote %s; doctor could not run here (%s); run: oomdoc doctor %s\n"
                      % (path, capture._text(e), " ".join(inputs)))


def _rank_of(rank: Any, world: Any) -> Optional[str]:
    try:
        return str(int(rank)) if int(world) > 1 else None
    except (TypeError, ValueError):
        return None


class _HFTrainerCallback(_Callback):
    """transformers.TrainerCallback: on_train_begin starts recording, on_step_end logs the
    step (state.global_step), on_train_end stops. Arguments as oomdoc.record's, plus
    doctor=False to skip the diagnosis after an OOM and out= (a stream) for the verdict.
    The hooks take what transformers' CallbackHandler.call_event passes: (args, state,
    control, model=..., optimizer=..., ...)."""

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        rank = _rank_of(getattr(args, "process_index", None), getattr(args, "world_size", 1))
        if rank is None and getattr(state, "is_world_process_zero", True) is False:
            rank = capture.process_rank()  # a rank, but the arguments do not say which
        self._start(rank)

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._step(getattr(state, "global_step", None))

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._stop()


class _LightningCallback(_Callback):
    """lightning.pytorch.Callback: setup starts recording (every stage: fit, validate,
    test, predict), on_train_batch_end logs the training step (trainer.global_step), an
    evaluation stage's batch ends log its batches, on_exception writes the snapshot of an
    OOM and stops, teardown stops. The hooks take what Lightning's _call_callback_hooks
    passes: (trainer, pl_module, *args, **kwargs); setup and teardown get stage= by
    keyword."""

    def setup(self, trainer: Any, pl_module: Any, stage: Optional[str] = None) -> None:
        # TrainerFn is a str enum ("fit", "validate", "test", "predict"). An evaluation
        # stage records under its own name (run.validate.pickle, run.test.steps.jsonl), so
        # its batches never continue the training steps' log.
        self._stage = str(getattr(stage, "value", stage) or "fit")
        self._start(_rank_of(getattr(trainer, "global_rank", None), getattr(trainer, "world_size", 1)),
                    None if self._stage == "fit" else self._stage)

    def teardown(self, trainer: Any, pl_module: Any, stage: Optional[str] = None) -> None:
        self._stop()

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        self._stop(exception)

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any,
                           batch_idx: int) -> None:
        self._step(getattr(trainer, "global_step", None))

    def _eval_batch(self, trainer: Any) -> None:
        # Evaluation batches are steps of their own stage only: inside fit they would
        # interleave with the training steps' numbers (and the sanity check's batches).
        if getattr(self, "_stage", "fit") != "fit":
            self._step(None)  # numbered on from the stage's log

    def on_validation_batch_end(self, trainer: Any, pl_module: Any, *args: Any, **kwargs: Any) -> None:
        self._eval_batch(trainer)

    def on_test_batch_end(self, trainer: Any, pl_module: Any, *args: Any, **kwargs: Any) -> None:
        self._eval_batch(trainer)

    def on_predict_batch_end(self, trainer: Any, pl_module: Any, *args: Any, **kwargs: Any) -> None:
        self._eval_batch(trainer)



class _LightningDuck:
    """What Lightning asks of every callback beyond its hooks, for the duck-typed class
    (the real Callback has them): its checkpoint state, keyed by state_key."""

    @property
    def state_key(self) -> str:
        return "LightningCallback"

    @property
    def _legacy_state_key(self) -> str:
        return self.state_key

    def state_dict(self) -> Dict[str, Any]:
        return {}

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        pass

    def on_save_checkpoint(self, trainer: Any, pl_module: Any, checkpoint: Any) -> None:
        pass

    def on_load_checkpoint(self, trainer: Any, pl_module: Any, checkpoint: Any) -> None:
        pass


# name: (implementation, framework modules in order of preference, base class name,
# what the duck-typed class adds)
_CLASSES: Dict[str, Tuple[type, Sequence[str], str, Tuple[type, ...]]] = {
    "HFTrainerCallback": (_HFTrainerCallback, ("transformers",), "TrainerCallback", ()),
    "LightningCallback": (_LightningCallback, ("lightning.pytorch", "pytorch_lightning"), "Callback",
                          (_LightningDuck,)),
}


def _framework_base(modules: Sequence[str], base_name: str) -> Optional[type]:
    for mod in modules:  # one already imported is the one the trainer uses
        base = getattr(sys.modules.get(mod), base_name, None)
        if isinstance(base, type):
            return base
    for mod in modules:
        try:
            base = getattr(importlib.import_module(mod), base_name, None)
        except Exception:  # not installed, or broken: duck-typed then
            continue
        if isinstance(base, type):
            return base
    return None


def __getattr__(name: str) -> type:
    """The callback classes, made on first use (PEP 562) and kept: one class per name."""
    if name not in _CLASSES:
        raise AttributeError("module %r has no attribute %r" % (__name__, name))
    impl, modules, base_name, duck = _CLASSES[name]
    base = _framework_base(modules, base_name)
    bases = (impl, base) if base is not None else (impl,) + duck
    cls = type(name, bases, {"__module__": __name__, "__qualname__": name, "__doc__": impl.__doc__})
    globals()[name] = cls
    return cls


def __dir__() -> Sequence[str]:
    return sorted(set(globals()) | set(_CLASSES))
