"""Callbacks for training frameworks: record allocator history, log per-step memory, and
on an out-of-memory error write the snapshot and print oomdoc doctor's verdict.

    trainer = transformers.Trainer(..., callbacks=[oomdoc.integrations.HFTrainerCallback("run")])
    trainer = lightning.pytorch.Trainer(callbacks=[oomdoc.integrations.LightningCallback("run")])

Neither framework is imported here. When the framework is already imported (it is, when
you build its Trainer), the callback also subclasses its base class (transformers'
TrainerCallback, Lightning's Callback), so isinstance checks pass; otherwise it is
duck-typed: every other on_* hook is a no-op.

transformers has no exception hook: the snapshot is written by torch's out-of-memory
observer at the failed allocation (torch 2.0+), and in any case when the error reaches
sys.excepthook (the script dies of it), which also turns recording off. Lightning calls
on_exception."""
import sys

from . import capture

__all__ = ["HFTrainerCallback", "LightningCallback"]


def _noop(*args, **kwargs):
    return None


class _Base:
    def __init__(self, name="run", max_entries=200_000, stacks="python", steps_format="jsonl",
                 device=None, doctor=True, out=None):
        self.name = name
        self.record_args = (name, max_entries, stacks, steps_format, device)
        self.run_doctor = doctor
        self.out = out  # where the verdict is printed (default: sys.stderr)
        self.recorder = None
        self.verdict = None  # the doctor Result after an OOM
        self._record = None
        self._prev_hook = None

    def __getattr__(self, name):
        # Hooks this callback does not use (transformers calls every on_* event of every
        # callback; Lightning looks its hooks up by name).
        if name.startswith("on_"):
            return _noop
        raise AttributeError(name)

    # -- shared behaviour ------------------------------------------------------------------
    def _begin(self):
        if self._record is not None:
            return
        self._record = capture.record(*self.record_args)
        self.recorder = self._record.__enter__()
        self.recorder.on_dump = self._after_dump
        if self.recorder.enabled:  # an OOM that ends the script: dump (if not yet), stop
            self._prev_hook = sys.excepthook
            sys.excepthook = self._excepthook

    def _step(self, step):
        if self.recorder is not None and self.recorder.enabled:
            self.recorder.step(step)

    def _end(self, exc=None):
        if self._record is None:
            return
        if self._prev_hook is not None and sys.excepthook == self._excepthook:
            sys.excepthook = self._prev_hook
        rec, self._record = self._record, None
        rec.__exit__(type(exc) if exc else None, exc, None)

    def _excepthook(self, etype, value, tb):
        try:
            self._end(value)
        finally:
            (self._prev_hook or sys.__excepthook__)(etype, value, tb)

    def _after_dump(self, path):
        """The snapshot is written: run doctor on it (and the step log) and print the verdict."""
        if not self.run_doctor:
            return
        from . import api
        inputs = [path]
        if self.recorder.step_count:
            inputs.append(self.recorder.steps_path)
        out = self.out or sys.stderr
        try:
            self.verdict = api.doctor(*inputs)
            out.write("oomdoc: out of memory: the diagnosis of %s\n%r\n" % (" ".join(inputs), self.verdict))
        except Exception as e:
            out.write("oomdoc: wrote %s; doctor could not run here (%s); run: oomdoc doctor %s\n"
                      % (path, e, " ".join(inputs)))


def _with_framework_base(cls, modules, base_name):
    """cls, also subclassing the framework's base class when that module is imported."""
    for mod in modules:
        m = sys.modules.get(mod)
        base = getattr(m, base_name, None) if m is not None else None
        if isinstance(base, type) and not issubclass(cls, base):
            return type(cls.__name__, (cls, base), {"__module__": cls.__module__})
    return cls


class HFTrainerCallback(_Base):
    """transformers.TrainerCallback: on_train_begin starts recording, on_step_end logs the
    step (state.global_step), on_train_end stops. Arguments as oomdoc.record's, plus
    doctor=False to skip the diagnosis after an OOM."""

    def __new__(cls, *args, **kwargs):
        real = _with_framework_base(cls, ("transformers",), "TrainerCallback")
        return object.__new__(real)

    def on_train_begin(self, args, state, control, **kwargs):
        self._begin()

    def on_step_end(self, args, state, control, **kwargs):
        self._step(getattr(state, "global_step", None))

    def on_train_end(self, args, state, control, **kwargs):
        self._end()


class LightningCallback(_Base):
    """lightning.pytorch.Callback: on_train_start starts recording, on_train_batch_end logs
    the step (trainer.global_step), on_exception writes the snapshot of an OOM and runs
    doctor, on_train_end stops."""

    def __new__(cls, *args, **kwargs):
        real = _with_framework_base(cls, ("lightning.pytorch", "pytorch_lightning"), "Callback")
        return object.__new__(real)

    def on_train_start(self, trainer, pl_module):
        self._begin()

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self._step(getattr(trainer, "global_step", None))

    def on_exception(self, trainer, pl_module, exception):
        self._end(exception)

    def on_train_end(self, trainer, pl_module):
        self._end()

    @property
    def state_key(self):
        return "oomdoc.LightningCallback"
