"""A stand-in for Lightning's callback machinery (lightning.pytorch.Callback): the hooks
with their documented signatures, looked up by name as Lightning's _call_callback_hooks
does, and a fit() loop: on_train_start, per batch on_train_batch_start /
on_train_batch_end(trainer, pl_module, outputs, batch, batch_idx) with global_step
advanced first, on_train_end; on an exception, on_exception(trainer, pl_module,
exception) on every callback, then the exception propagates (as Trainer.fit does)."""


class Callback:
    @property
    def state_key(self):
        return type(self).__qualname__

    def setup(self, trainer, pl_module, stage): pass
    def teardown(self, trainer, pl_module, stage): pass
    def on_train_start(self, trainer, pl_module): pass
    def on_train_end(self, trainer, pl_module): pass
    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx): pass
    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx): pass
    def on_exception(self, trainer, pl_module, exception): pass
    def state_dict(self): return {}
    def load_state_dict(self, state_dict): pass


class Trainer:
    def __init__(self, callbacks, step_fn, steps):
        self.callbacks, self.step_fn, self.steps = callbacks, step_fn, steps
        self.global_step = 0
        self.module = object()

    def hook(self, name, *args):
        for cb in self.callbacks:
            fn = getattr(cb, name, None)
            if callable(fn):
                fn(self, self.module, *args)

    def fit(self):
        try:
            self.hook("setup", "fit")
            self.hook("on_train_start")
            for i in range(self.steps):
                self.hook("on_train_batch_start", i, i)
                out = self.step_fn(i)
                self.global_step += 1
                self.hook("on_train_batch_end", out, i, i)
            self.hook("on_train_end")
        except BaseException as e:
            self.hook("on_exception", e)
            raise
        finally:
            self.hook("teardown", "fit")
