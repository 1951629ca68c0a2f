"""A stand-in for Lightning's trainer and callback machinery, written from the sources:

* src/lightning/pytorch/trainer/call.py @ d5a9b775ced81801e5fa3e750cf8112bc6a303c5:
  _call_and_handle_interrupt runs fit/validate/test/predict through the strategy's
  launcher; on any exception _interrupt calls every callback's on_exception(trainer,
  pl_module, exception), then trainer._teardown() (the Trainer's own, not the callbacks'
  teardown hook) and re-raises. _call_setup_hook / _call_teardown_hook call
  _call_callback_hooks(trainer, "setup" | "teardown", stage=fn): stage by keyword.
  _call_callback_hooks looks each hook up with getattr(callback, hook_name) (no default),
  calls it when callable inside trainer.profiler.profile(f"[Callback]{callback.state_key}
  .{hook_name}"), as fn(trainer, trainer.lightning_module, *args, **kwargs).
* src/lightning/pytorch/trainer/trainer.py @ d2bf065f2099fc1e42bed1f40ee76fe45e84f834:
  _run: the setup hook, on_fit_start (fit), _run_stage, _teardown, on_fit_end, the
  teardown hook; _run_stage: the evaluation or predict loop, or for fit the sanity check
  (on_sanity_check_start, the validation loop for num_sanity_val_steps batches,
  on_sanity_check_end) then the fit loop; global_rank is the strategy's.
* src/lightning/fabric/strategies/launchers/subprocess_script.py @
  48e0597bc82368c94456977f717a80dfaaf5c097: _SubprocessScriptLauncher.launch on the main
  process sets MASTER_ADDR, MASTER_PORT, NODE_RANK, LOCAL_RANK and WORLD_SIZE (=
  processes x nodes) and starts the same script for local ranks 1.. with LOCAL_RANK set
  (_basic_subprocess_cmd: sys.executable, the script, its arguments); the strategy's
  global rank is node_rank * processes per node + local_rank. RANK is never set.

The model's work is the test's step functions: train_step(batch_idx), val_step(batch_idx)."""
import contextlib
import os
import subprocess
import sys
from enum import Enum


class TrainerFn(str, Enum):
    FITTING = "fit"
    VALIDATING = "validate"
    TESTING = "test"
    PREDICTING = "predict"


class Callback:
    @property
    def state_key(self):
        return self.__class__.__qualname__

    @property
    def _legacy_state_key(self):
        return type(self)

    def setup(self, trainer, pl_module, stage): pass
    def teardown(self, trainer, pl_module, stage): pass
    def on_fit_start(self, trainer, pl_module): pass
    def on_fit_end(self, trainer, pl_module): pass
    def on_sanity_check_start(self, trainer, pl_module): pass
    def on_sanity_check_end(self, trainer, pl_module): pass
    def on_train_start(self, trainer, pl_module): pass
    def on_train_end(self, trainer, pl_module): pass
    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx): pass
    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx): pass
    def on_validation_start(self, trainer, pl_module): pass
    def on_validation_end(self, trainer, pl_module): pass
    def on_validation_batch_start(self, trainer, pl_module, batch, batch_idx, dataloader_idx=0): pass
    def on_validation_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0): pass
    def on_test_start(self, trainer, pl_module): pass
    def on_test_end(self, trainer, pl_module): pass
    def on_test_batch_start(self, trainer, pl_module, batch, batch_idx, dataloader_idx=0): pass
    def on_test_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0): pass
    def on_predict_start(self, trainer, pl_module): pass
    def on_predict_end(self, trainer, pl_module): pass
    def on_predict_batch_start(self, trainer, pl_module, batch, batch_idx, dataloader_idx=0): pass
    def on_predict_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0): pass
    def on_exception(self, trainer, pl_module, exception): pass
    def state_dict(self): return {}
    def load_state_dict(self, state_dict): pass
    def on_save_checkpoint(self, trainer, pl_module, checkpoint): pass
    def on_load_checkpoint(self, trainer, pl_module, checkpoint): pass


class _Module:
    _current_fx_name = None


class _Profiler:
    def __init__(self):
        self.names = []

    @contextlib.contextmanager
    def profile(self, name):
        self.names.append(name)
        yield


class _Launcher:
    """_SubprocessScriptLauncher: the main process starts the other local ranks."""

    def __init__(self, num_processes, num_nodes):
        self.num_processes, self.num_nodes = num_processes, num_nodes
        self.procs = []

    def launch(self, function, *args, trainer=None, **kwargs):
        if int(os.environ.get("LOCAL_RANK", "0")) == 0 and not self.procs:
            os.environ["MASTER_ADDR"] = "127.0.0.1"
            os.environ["MASTER_PORT"] = "29500"
            os.environ["NODE_RANK"] = os.environ.get("NODE_RANK", "0")
            os.environ["LOCAL_RANK"] = "0"
            os.environ["WORLD_SIZE"] = str(self.num_processes * self.num_nodes)
            for local_rank in range(1, self.num_processes):
                env_copy = os.environ.copy()
                env_copy["LOCAL_RANK"] = str(local_rank)
                command = [sys.executable, os.path.abspath(sys.argv[0])] + sys.argv[1:]
                self.procs.append(subprocess.Popen(command, env=env_copy))
        return function(*args, **kwargs)


class _Strategy:
    def __init__(self, devices, num_nodes):
        self.num_processes, self.num_nodes = devices, num_nodes
        self.launcher = _Launcher(devices, num_nodes) if devices * num_nodes > 1 else None

    @property
    def global_rank(self):
        local = int(os.environ.get("LOCAL_RANK", "0"))
        node = int(os.environ.get("NODE_RANK", "0"))
        return node * self.num_processes + local

    @property
    def world_size(self):
        return self.num_processes * self.num_nodes

    def teardown(self): pass
    def on_exception(self, exception): pass


def _call_callback_hooks(trainer, hook_name, *args, **kwargs):
    trainer.hooks.append(hook_name)  # the stand-in's record, for the tests
    pl_module = trainer.lightning_module
    if pl_module:
        prev_fx_name = pl_module._current_fx_name
        pl_module._current_fx_name = hook_name
    for callback in trainer.callbacks:
        fn = getattr(callback, hook_name)
        if callable(fn):
            with trainer.profiler.profile(f"[Callback]{callback.state_key}.{hook_name}"):
                fn(trainer, trainer.lightning_module, *args, **kwargs)
    if pl_module:
        pl_module._current_fx_name = prev_fx_name


def _interrupt(trainer, exception):
    trainer.interrupted = True
    _call_callback_hooks(trainer, "on_exception", exception)
    trainer.strategy.on_exception(exception)


def _call_and_handle_interrupt(trainer, trainer_fn, *args, **kwargs):
    try:
        if trainer.strategy.launcher is not None:
            return trainer.strategy.launcher.launch(trainer_fn, *args, trainer=trainer, **kwargs)
        return trainer_fn(*args, **kwargs)
    except KeyboardInterrupt as exception:
        if not trainer.interrupted:
            _interrupt(trainer, exception)
    except BaseException as exception:
        _interrupt(trainer, exception)
        trainer._teardown()
        raise


class Trainer:
    def __init__(self, callbacks, train_step=None, val_step=None, max_steps=3, val_batches=2,
                 num_sanity_val_steps=2, devices=1, num_nodes=1):
        self.callbacks = list(callbacks)
        self.train_step = train_step or (lambda i: {"loss": 1.0})
        self.val_step = val_step or (lambda i: {"val_loss": 1.0})
        self.max_steps, self.val_batches = max_steps, val_batches
        self.num_sanity_val_steps = num_sanity_val_steps
        self.strategy = _Strategy(devices, num_nodes)
        self.lightning_module = _Module()
        self.profiler = _Profiler()
        self.global_step = 0
        self.sanity_checking = False
        self.interrupted = False
        self.fn = None
        self.hooks = []  # the callback hooks called, in order

    global_rank = property(lambda self: self.strategy.global_rank)
    world_size = property(lambda self: self.strategy.world_size)

    def _hook(self, name, *args, **kwargs):
        _call_callback_hooks(self, name, *args, **kwargs)

    def fit(self):
        self.fn = TrainerFn.FITTING
        return _call_and_handle_interrupt(self, self._run)

    def validate(self):
        self.fn = TrainerFn.VALIDATING
        return _call_and_handle_interrupt(self, self._run)

    def test(self):
        self.fn = TrainerFn.TESTING
        return _call_and_handle_interrupt(self, self._run)

    def predict(self):
        self.fn = TrainerFn.PREDICTING
        return _call_and_handle_interrupt(self, self._run)

    def _run(self):
        self._hook("setup", stage=self.fn)
        if self.fn == TrainerFn.FITTING:
            self._hook("on_fit_start")
        self._run_stage()
        self._teardown()
        if self.fn == TrainerFn.FITTING:
            self._hook("on_fit_end")
        self._hook("teardown", stage=self.fn)
        for p in self.strategy.launcher.procs if self.strategy.launcher else ():
            p.wait()

    def _teardown(self):
        self.strategy.teardown()

    def _run_stage(self):
        if self.fn == TrainerFn.FITTING:
            if self.num_sanity_val_steps > 0:
                self.sanity_checking = True
                self._hook("on_sanity_check_start")
                self._eval_loop("validation", self.num_sanity_val_steps)
                self._hook("on_sanity_check_end")
                self.sanity_checking = False
            self._fit_loop()
        else:
            name = {"validate": "validation", "test": "test", "predict": "predict"}[self.fn.value]
            self._eval_loop(name, self.val_batches)

    def _eval_loop(self, name, batches):
        self._hook("on_%s_start" % name)
        for i in range(batches):
            self._hook("on_%s_batch_start" % name, i, i)
            out = self.val_step(i)
            self._hook("on_%s_batch_end" % name, out, i, i)
        self._hook("on_%s_end" % name)

    def _fit_loop(self):
        self._hook("on_train_start")
        for i in range(self.max_steps):
            self._hook("on_train_batch_start", i, i)
            out = self.train_step(i)
            self.global_step += 1
            self._hook("on_train_batch_end", out, i, i)
        self._hook("on_train_end")
