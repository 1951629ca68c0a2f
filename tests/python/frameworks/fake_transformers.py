"""A stand-in for the Hugging Face Trainer's callback machinery, written from the sources:

* transformers src/transformers/trainer_callback.py @ 55093b758b338fdc7903e778509523d755ae080d:
  TrainerCallback's hooks; TrainerState (global_step, max_steps, is_local_process_zero,
  is_world_process_zero); CallbackHandler.add_callback (a second callback of the same
  class logs "You are adding a <class> to the callbacks of this Trainer, but there is
  already one") and call_event, which calls the event on every callback as
  (args, state, control, model=, processing_class=, optimizer=, lr_scheduler=,
  train_dataloader=, eval_dataloader=, **kwargs), a non-None result replacing control.
* transformers src/transformers/trainer.py @ 2cda12cbf6e476183e68ec476551fa7e3717394a:
  Trainer.train starts the memory tracker (TrainerMemoryTracker: reset_peak_memory_stats
  at start, max_memory_allocated read at the end), then calls
  find_executable_batch_size(self._inner_training_loop, self._train_batch_size,
  args.auto_find_batch_size); each _inner_training_loop makes a new TrainerState (so
  global_step starts again at 0) and fires on_train_begin; an exception leaves with no
  further event (the Trainer has no exception hook).
* accelerate src/accelerate/utils/memory.py @ 4e48dde92947acb42718aa0da01a9fb148465ce0:
  find_executable_batch_size catches an exception for which should_reduce_batch_size is
  true (a RuntimeError whose only argument holds "CUDA out of memory."), calls
  torch.cuda.empty_cache(), halves the batch size and calls the loop again.

The step's work is the test's step_fn(batch_size, global_step)."""
import types

import torch  # the stand-in (tests put it first on sys.path)

WARNINGS = []  # what transformers' logger.warning would have printed


class TrainerCallback:
    def on_init_end(self, args, state, control, **kwargs): pass
    def on_train_begin(self, args, state, control, **kwargs): pass
    def on_train_end(self, args, state, control, **kwargs): pass
    def on_epoch_begin(self, args, state, control, **kwargs): pass
    def on_epoch_end(self, args, state, control, **kwargs): pass
    def on_step_begin(self, args, state, control, **kwargs): pass
    def on_pre_optimizer_step(self, args, state, control, **kwargs): pass
    def on_optimizer_step(self, args, state, control, **kwargs): pass
    def on_substep_end(self, args, state, control, **kwargs): pass
    def on_step_end(self, args, state, control, **kwargs): pass
    def on_evaluate(self, args, state, control, **kwargs): pass
    def on_predict(self, args, state, control, metrics, **kwargs): pass
    def on_save(self, args, state, control, **kwargs): pass
    def on_log(self, args, state, control, **kwargs): pass
    def on_prediction_step(self, args, state, control, **kwargs): pass


class TrainerState:
    def __init__(self, is_world_process_zero=True):
        self.epoch = None
        self.global_step = 0
        self.max_steps = 0
        self.train_batch_size = None
        self.is_local_process_zero = is_world_process_zero
        self.is_world_process_zero = is_world_process_zero


class TrainerControl:
    def __init__(self):
        self.should_training_stop = False
        self.should_epoch_stop = False
        self.should_save = False
        self.should_evaluate = False
        self.should_log = False


class DefaultFlowCallback(TrainerCallback):
    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step >= state.max_steps:
            control.should_training_stop = True
        return control


class CallbackHandler(TrainerCallback):
    def __init__(self, callbacks, model, processing_class, optimizer, lr_scheduler):
        self.callbacks = []
        for cb in callbacks:
            self.add_callback(cb)
        self.model = model
        self.processing_class = processing_class
        self.optimizer = optimizer
        self.lr_scheduler = lr_scheduler
        self.train_dataloader = None
        self.eval_dataloader = None

    def add_callback(self, callback):
        cb = callback() if isinstance(callback, type) else callback
        cb_class = callback if isinstance(callback, type) else callback.__class__
        if cb_class in [c.__class__ for c in self.callbacks]:
            WARNINGS.append("You are adding a %s to the callbacks of this Trainer, but there is already one."
                            % cb_class)
        self.callbacks.append(cb)

    def on_init_end(self, args, state, control):
        return self.call_event("on_init_end", args, state, control)

    def on_train_begin(self, args, state, control):
        control.should_training_stop = False
        return self.call_event("on_train_begin", args, state, control)

    def on_train_end(self, args, state, control):
        return self.call_event("on_train_end", args, state, control)

    def on_epoch_begin(self, args, state, control):
        control.should_epoch_stop = False
        return self.call_event("on_epoch_begin", args, state, control)

    def on_epoch_end(self, args, state, control):
        return self.call_event("on_epoch_end", args, state, control)

    def on_step_begin(self, args, state, control):
        control.should_log = control.should_evaluate = control.should_save = False
        return self.call_event("on_step_begin", args, state, control)

    def on_pre_optimizer_step(self, args, state, control):
        return self.call_event("on_pre_optimizer_step", args, state, control)

    def on_optimizer_step(self, args, state, control):
        return self.call_event("on_optimizer_step", args, state, control)

    def on_step_end(self, args, state, control):
        return self.call_event("on_step_end", args, state, control)

    def on_log(self, args, state, control, logs):
        control.should_log = False
        return self.call_event("on_log", args, state, control, logs=logs)

    def call_event(self, event, args, state, control, **kwargs):
        for callback in self.callbacks:
            result = getattr(callback, event)(
                args, state, control, model=self.model, processing_class=self.processing_class,
                optimizer=self.optimizer, lr_scheduler=self.lr_scheduler,
                train_dataloader=self.train_dataloader, eval_dataloader=self.eval_dataloader, **kwargs)
            if result is not None:
                control = result
        return control


def should_reduce_batch_size(exception):
    statements = ["CUDA out of memory.", "cuDNN error: CUDNN_STATUS_NOT_SUPPORTED.",
                  "DefaultCPUAllocator: can't allocate memory"]
    if isinstance(exception, RuntimeError) and len(exception.args) == 1:
        return any(err in exception.args[0] for err in statements)
    return False


def find_executable_batch_size(function, starting_batch_size=128, auto_find_batch_size=False):
    """transformers.trainer_utils' wrapper: accelerate's decorator when auto_find_batch_size."""
    if not auto_find_batch_size:
        return lambda *a, **k: function(starting_batch_size, *a, **k)
    batch_size = starting_batch_size

    def decorator(*args, **kwargs):
        nonlocal batch_size
        torch.cuda.empty_cache()
        while True:
            if batch_size == 0:
                raise RuntimeError("No executable batch size found, reached zero.")
            try:
                return function(batch_size, *args, **kwargs)
            except Exception as e:
                if should_reduce_batch_size(e):
                    torch.cuda.empty_cache()
                    batch_size //= 2
                else:
                    raise
    return decorator


class Trainer:
    def __init__(self, callbacks, step_fn, max_steps, batch_size=64, auto_find_batch_size=False,
                 process_index=0, world_size=1):
        self.args = types.SimpleNamespace(
            output_dir="out", auto_find_batch_size=auto_find_batch_size, process_index=process_index,
            world_size=world_size, per_device_train_batch_size=batch_size)
        self.callback_handler = CallbackHandler([DefaultFlowCallback] + list(callbacks), object(), None,
                                                None, None)
        self.state = TrainerState(process_index == 0)
        self.control = TrainerControl()
        self.step_fn, self.max_steps = step_fn, max_steps
        self.batch_sizes = []  # each inner loop's batch size
        self.metrics = {}
        self.control = self.callback_handler.on_init_end(self.args, self.state, self.control)

    def train(self):
        cuda = torch.cuda.is_available()
        if cuda:
            torch.cuda.reset_peak_memory_stats()  # TrainerMemoryTracker.start
        loop = find_executable_batch_size(self._inner_training_loop, self.args.per_device_train_batch_size,
                                          self.args.auto_find_batch_size)
        out = loop(args=self.args)
        if cuda:
            self.metrics["train_mem_gpu_peaked"] = torch.cuda.max_memory_allocated()  # .stop()
        return out

    def _inner_training_loop(self, batch_size=None, args=None):
        self.batch_sizes.append(batch_size)
        self.state = TrainerState(args.process_index == 0)
        self.state.max_steps = self.max_steps
        self.state.train_batch_size = batch_size
        self.control = self.callback_handler.on_train_begin(args, self.state, self.control)
        self.control = self.callback_handler.on_epoch_begin(args, self.state, self.control)
        for _ in range(self.max_steps):
            self.control = self.callback_handler.on_step_begin(args, self.state, self.control)
            self.step_fn(batch_size, self.state.global_step)
            self.control = self.callback_handler.on_pre_optimizer_step(args, self.state, self.control)
            self.control = self.callback_handler.on_optimizer_step(args, self.state, self.control)
            self.state.global_step += 1
            self.control = self.callback_handler.on_step_end(args, self.state, self.control)
            self.control = self.callback_handler.on_log(args, self.state, self.control, {"loss": 1.0})
            if self.control.should_training_stop:
                break
        self.control = self.callback_handler.on_epoch_end(args, self.state, self.control)
        self.control = self.callback_handler.on_train_end(args, self.state, self.control)
        return self.state.global_step
