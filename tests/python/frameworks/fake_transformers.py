"""A stand-in for transformers' callback machinery (trainer_callback.py): TrainerCallback
with its documented hooks (args, state, control, **kwargs), and a CallbackHandler that,
as transformers' does, calls every event on every callback, and a tiny Trainer loop that
fires on_train_begin, per step on_step_begin / on_step_end (state.global_step advanced
first), on_log, and on_train_end; an exception leaves train() with no further event."""
import types


class TrainerCallback:
    def on_init_end(self, args, state, control, **kwargs): pass
    def on_train_begin(self, args, state, control, **kwargs): pass
    def on_train_end(self, args, state, control, **kwargs): pass
    def on_epoch_begin(self, args, state, control, **kwargs): pass
    def on_epoch_end(self, args, state, control, **kwargs): pass
    def on_step_begin(self, args, state, control, **kwargs): pass
    def on_step_end(self, args, state, control, **kwargs): pass
    def on_log(self, args, state, control, **kwargs): pass


EVENTS = ["on_init_end", "on_train_begin", "on_epoch_begin", "on_step_begin", "on_substep_end",
          "on_optimizer_step", "on_step_end", "on_log", "on_evaluate", "on_save", "on_epoch_end",
          "on_train_end"]


class Trainer:
    def __init__(self, callbacks, step_fn, steps):
        self.callbacks = [c() if isinstance(c, type) else c for c in callbacks]
        self.args = types.SimpleNamespace(output_dir="out")
        self.state = types.SimpleNamespace(global_step=0, epoch=0.0)
        self.control = types.SimpleNamespace(should_training_stop=False)
        self.step_fn, self.steps = step_fn, steps
        self.event("on_init_end")

    def event(self, name, **kw):
        for cb in self.callbacks:
            result = getattr(cb, name)(self.args, self.state, self.control, model=None, **kw)
            if result is not None:
                self.control = result

    def train(self):
        self.event("on_train_begin")
        self.event("on_epoch_begin")
        for _ in range(self.steps):
            self.event("on_step_begin")
            self.step_fn(self.state.global_step)
            self.event("on_optimizer_step")
            self.state.global_step += 1
            self.event("on_step_end")
            self.event("on_log", logs={"loss": 1.0})
        self.event("on_epoch_end")
        self.event("on_train_end")
