"""Tests of oomdoc.integrations (HFTrainerCallback, LightningCallback), driven exactly as the
frameworks drive callbacks: tests/python/frameworks/fake_transformers.py (transformers'
CallbackHandler.call_event, Trainer.train's auto_find_batch_size path through accelerate's
find_executable_batch_size) and fake_lightning.py (Lightning's _call_callback_hooks,
_call_and_handle_interrupt / _interrupt, the sanity check, validate/test/predict, the DDP
subprocess launcher), each citing the source file and commit it was written from; torch
is the stand-in of tests/python/standin. A notebook is IPython's own InteractiveShell
where IPython is installed (Debian's python3), else a shell that fires post_run_cell as
IPython/core/interactiveshell.py's run_cell does (events.trigger("post_run_cell",
result), result.error_in_exec set to the cell's exception). Run from the repository root."""
import copy
import io
import json
import os
import pickle
import subprocess
import sys
import tempfile
import types
import unittest
import warnings
from contextlib import redirect_stderr, redirect_stdout

ROOT = os.getcwd()
sys.path.insert(0, os.path.join(ROOT, "tests", "python", "standin"))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
sys.path.insert(0, os.path.join(ROOT, "python"))
import torch  # noqa: E402  (the stand-in)
import oomdoc  # noqa: E402
from oomdoc import capture, integrations  # noqa: E402
from frameworks import fake_lightning, fake_transformers  # noqa: E402
from runcase import OOM_PICKLE, fresh_capture  # noqa: E402

ROWS = [(100 + i, 200 + i, 300 + i) for i in range(40)]
FRAMEWORKS = ("transformers", "lightning.pytorch", "pytorch_lightning")


def oom_message():
    # What the caching allocator raises; accelerate's should_reduce_batch_size reads it.
    return "CUDA out of memory. Tried to allocate 2.00 GiB."


class Case(unittest.TestCase):
    frameworks_importable = True

    def setUp(self):
        torch.reset("2.1")
        torch.snapshot_source = OOM_PICKLE
        torch.script_steps(ROWS)
        fresh_capture()
        fake_transformers.WARNINGS.clear()
        self.saved_hook = sys.excepthook
        self.tmp = tempfile.TemporaryDirectory()
        self.name = os.path.join(self.tmp.name, "run")
        for mod in FRAMEWORKS:
            sys.modules.pop(mod, None)
        if self.frameworks_importable:
            sys.modules["transformers"] = fake_transformers
            sys.modules["lightning.pytorch"] = fake_lightning
        else:
            for mod in FRAMEWORKS:
                sys.modules[mod] = None  # import -> ImportError
        for cls in ("HFTrainerCallback", "LightningCallback"):
            integrations.__dict__.pop(cls, None)  # made again, on the frameworks above

    def tearDown(self):
        self.tmp.cleanup()
        for mod in FRAMEWORKS:
            sys.modules.pop(mod, None)
        for cls in ("HFTrainerCallback", "LightningCallback"):
            integrations.__dict__.pop(cls, None)
        self.assertIs(sys.excepthook, self.saved_hook, "a callback left its excepthook installed")
        self.assertIsNone(capture._active, "a test left a recording running")
        sys.excepthook = self.saved_hook

    def files(self):
        return sorted(os.listdir(self.tmp.name))

    def steps(self, path):
        with open(path) as f:
            return [json.loads(x)["step"] for x in f]

    def history(self):
        return [c for c in torch.calls if c[0] == "record_memory_history"]

    def hf(self, *callbacks, steps=3, oom_at=None, **kw):
        """A Trainer whose step runs the next scripted step, or runs out of memory at
        oom_at: a global step, or (batch_size, global_step) pairs for the search."""
        def step(batch_size, global_step):
            torch.run_step()
            hit = oom_at(batch_size, global_step) if callable(oom_at) else global_step == oom_at
            if hit:
                torch.simulate_oom()
        return fake_transformers.Trainer(callbacks, step, steps, **kw)


class HFTrainer(Case):
    def test_hf_steps_and_recording_from_train_begin_to_train_end(self):
        cb = integrations.HFTrainerCallback(self.name)
        with redirect_stderr(io.StringIO()) as err:
            self.hf(cb).train()
        self.assertEqual(self.steps(self.name + ".steps.jsonl"), [1, 2, 3])  # state.global_step
        self.assertEqual(self.history()[0][2]["enabled"], "all")
        self.assertEqual(self.history()[-1][2]["enabled"], None)  # off at on_train_end
        self.assertIn("next: oomdoc doctor %s.steps.jsonl" % self.name, err.getvalue())
        self.assertIsInstance(cb, fake_transformers.TrainerCallback)

    def test_hf_oom_writes_the_snapshot_at_the_allocation_and_prints_the_verdict(self):
        for version in ("2.1", "2.0"):
            torch.reset(version)
            torch.snapshot_source = OOM_PICKLE
            torch.script_steps(ROWS)
            fresh_capture()
            out = io.StringIO()
            cb = integrations.HFTrainerCallback(self.name, out=out)
            with redirect_stderr(io.StringIO()), self.assertRaises(torch.cuda.OutOfMemoryError):
                self.hf(cb, steps=5, oom_at=2).train()
            self.assertTrue(os.path.exists(self.name + ".pickle"), version)  # by the observer
            self.assertEqual(cb.verdict["verdict"], "cap_limit")
            self.assertIn("verdict: cap_limit", out.getvalue())
            # The Trainer has no exception hook: the error ends the script through
            # sys.excepthook, which stops the recording and then reports the error.
            self.assertIsNot(sys.excepthook, self.saved_hook)
            shown = []
            self.saved_hook, saved = (lambda *a: shown.append(a[0])), self.saved_hook
            cb._prev_hook = self.saved_hook
            with redirect_stderr(io.StringIO()):
                sys.excepthook(torch.cuda.OutOfMemoryError, torch.cuda.OutOfMemoryError(oom_message()), None)
            self.assertEqual(shown, [torch.cuda.OutOfMemoryError])
            self.assertIsNone(capture._active)
            off = ((), {"enabled": None, "device": None}) if version == "2.1" else ((False,), {"device": None})
            self.assertEqual(self.history()[-1][1:], off)
            self.saved_hook = saved
            sys.excepthook = saved
            os.remove(self.name + ".pickle")

    def test_hf_torch_1_13_dumps_when_the_error_ends_the_script(self):
        torch.reset("1.13")  # no out-of-memory observer
        torch.snapshot_source = OOM_PICKLE
        torch.script_steps(ROWS)
        cb = integrations.HFTrainerCallback(self.name, doctor=False)
        with redirect_stderr(io.StringIO()), self.assertRaises(torch.cuda.OutOfMemoryError) as cm:
            self.hf(cb, steps=5, oom_at=1).train()
        self.assertFalse(os.path.exists(self.name + ".pickle"))
        sys.excepthook = cb._prev_hook  # as if the interpreter called our hook
        with redirect_stderr(io.StringIO()):
            cb._excepthook(type(cm.exception), cm.exception, None)
        self.assertEqual(self.files(), ["run.pickle", "run.steps.jsonl"])

    def test_hf_auto_find_batch_size_gives_each_oom_its_own_snapshot(self):
        # accelerate halves 64 -> 32 -> 16 after an OOM in the 3rd and then the 1st step;
        # each inner loop fires on_train_begin again with a new TrainerState.
        out = io.StringIO()
        cb = integrations.HFTrainerCallback(self.name, out=out)
        trainer = self.hf(cb, steps=4, oom_at=lambda bs, step: (bs, step) in ((64, 2), (32, 0)),
                          auto_find_batch_size=True)
        with redirect_stderr(io.StringIO()) as err:
            self.assertEqual(trainer.train(), 4)
        self.assertEqual(trainer.batch_sizes, [64, 32, 16])
        # The second attempt died in its first step: a snapshot, no step logged.
        self.assertEqual(self.files(), ["run.2.pickle", "run.3.steps.jsonl", "run.pickle", "run.steps.jsonl"])
        self.assertEqual(self.steps(self.name + ".steps.jsonl"), [1, 2])
        self.assertEqual(self.steps(self.name + ".3.steps.jsonl"), [1, 2, 3, 4])
        self.assertEqual(out.getvalue().count("verdict: cap_limit"), 2)  # one diagnosis per OOM
        self.assertEqual(len([h for h in self.history() if h[2].get("enabled") == "all"]), 1)
        self.assertIn("next: oomdoc doctor %s.3.steps.jsonl" % self.name, err.getvalue())

    def test_hf_auto_find_batch_size_on_torch_1_13_keeps_each_attempts_steps(self):
        torch.reset("1.13")  # no observer: the OOM accelerate catches leaves no snapshot
        torch.snapshot_source = OOM_PICKLE
        torch.script_steps(ROWS)
        cb = integrations.HFTrainerCallback(self.name)
        trainer = self.hf(cb, steps=3, oom_at=lambda bs, step: bs == 64 and step == 1, auto_find_batch_size=True)
        with redirect_stderr(io.StringIO()):
            trainer.train()
        self.assertEqual(self.files(), ["run.2.steps.jsonl", "run.steps.jsonl"])
        self.assertEqual(self.steps(self.name + ".2.steps.jsonl"), [1, 2, 3])

    def test_hf_rank_from_the_training_arguments(self):
        cb = integrations.HFTrainerCallback(self.name)
        with redirect_stderr(io.StringIO()):
            self.hf(cb, process_index=1, world_size=2).train()
        self.assertEqual(self.files(), ["run.rank1.steps.jsonl"])
        os.environ.update(RANK="7", WORLD_SIZE="8")  # the arguments outrank the environment
        cb = integrations.HFTrainerCallback(self.name)
        with redirect_stderr(io.StringIO()):
            self.hf(cb, process_index=0, world_size=2).train()
        self.assertEqual(self.files(), ["run.rank0.steps.jsonl", "run.rank1.steps.jsonl"])

    def test_hf_memory_metrics_survive(self):
        # TrainerMemoryTracker resets the peak at train start and reads it at the end:
        # oomdoc must not reset it in between.
        torch.script_steps([(100, 200, 300), (100, 200, 900), (100, 200, 400)])
        trainer = self.hf(integrations.HFTrainerCallback(self.name))
        with redirect_stderr(io.StringIO()):
            trainer.train()
        self.assertEqual(trainer.metrics["train_mem_gpu_peaked"], 900)
        self.assertEqual(len([c for c in torch.calls if c[0] == "reset_peak_memory_stats"]), 1)  # the tracker's

    def test_hf_one_class_picklable_and_the_duplicate_warning(self):
        cls = integrations.HFTrainerCallback
        a, b = cls(self.name), cls(self.name + "2")
        self.assertIs(type(a), type(b))
        self.assertIs(cls, integrations.HFTrainerCallback)
        fake_transformers.CallbackHandler([a, b], None, None, None, None)
        self.assertEqual(len(fake_transformers.WARNINGS), 1)  # the Trainer notices the second one
        self.assertIn("HFTrainerCallback", fake_transformers.WARNINGS[0])
        with redirect_stderr(io.StringIO()):
            trainer = self.hf(a, steps=2)
            trainer.callback_handler.on_train_begin(trainer.args, trainer.state, trainer.control)
            for copied in (pickle.loads(pickle.dumps(a)), copy.deepcopy(a)):  # while recording
                self.assertIs(type(copied), cls)
                self.assertIsNone(copied.recorder)
                self.assertEqual(copied.record_args, a.record_args)
            trainer.callback_handler.on_train_end(trainer.args, trainer.state, trainer.control)
        # Unpickled in a fresh interpreter: the class is found by its name.
        data = pickle.dumps(cls(self.name, max_entries=5))
        code = ("import pickle,sys; sys.path[:0]=['python']; cb=pickle.loads(sys.stdin.buffer.read()); "
                "print(type(cb).__module__, type(cb).__name__, cb.record_args[1])")
        r = subprocess.run([sys.executable, "-c", code], input=data, capture_output=True, timeout=60)
        self.assertEqual(r.stdout.decode().split(), ["oomdoc.integrations", "HFTrainerCallback", "5"], r.stderr)


class Notebook(Case):
    """A notebook cell that dies of an OOM, run again: IPython never calls sys.excepthook."""

    def shell(self):
        try:
            from IPython.core.interactiveshell import InteractiveShell
        except ImportError:
            InteractiveShell = None
        if InteractiveShell is not None:
            shell = InteractiveShell.instance()
            sys.modules["IPython"].get_ipython()  # the shell oomdoc finds
            return shell, lambda code, ns: shell.run_cell(code)

        class Events:
            def __init__(self):
                self.callbacks = {"post_run_cell": []}

            def register(self, event, fn):
                self.callbacks[event].append(fn)

            def trigger(self, event, *args):
                for fn in self.callbacks[event]:
                    fn(*args)

        shell = types.SimpleNamespace(events=Events(), user_ns={})
        sys.modules["IPython"] = types.SimpleNamespace(get_ipython=lambda: shell)

        def run_cell(code, ns):
            result = types.SimpleNamespace(error_in_exec=None, error_before_exec=None)
            try:
                exec(code, ns)
            except BaseException as e:
                result.error_in_exec = e
            shell.events.trigger("post_run_cell", result)
            return result
        self.addCleanup(sys.modules.pop, "IPython", None)
        return shell, run_cell

    def test_notebook_rerun_after_an_oom(self):
        capture._ipython_hooked = False
        torch.reset("1.13")  # no observer: the snapshot comes when the cell's error ends it
        torch.snapshot_source = OOM_PICKLE
        torch.script_steps(ROWS)
        shell, run_cell = self.shell()
        ns = getattr(shell, "user_ns", {})
        ns.update(make=lambda: self.hf(integrations.HFTrainerCallback(self.name, doctor=False), steps=5, oom_at=2),
                  oomdoc=oomdoc, torch=torch, name=self.name)
        try:
            with redirect_stderr(io.StringIO()), redirect_stdout(io.StringIO()):  # the cells' tracebacks
                for _ in range(2):
                    r = run_cell("make().train()", ns)
                    self.assertIsInstance(r.error_in_exec, torch.cuda.OutOfMemoryError)
                    self.assertIsNone(capture._active)  # stopped by post_run_cell
                # A later record() records (it used to be ignored: "the outer one records").
                r = run_cell("with oomdoc.record(name + '-cell'):\n    torch.run_step(); oomdoc.step()\n", ns)
                self.assertIsNone(r.error_in_exec)
        finally:
            if hasattr(shell, "events") and capture._after_cell in shell.events.callbacks.get("post_run_cell", []):
                shell.events.unregister("post_run_cell", capture._after_cell) if hasattr(
                    shell.events, "unregister") else None
            capture._ipython_hooked = False
        self.assertEqual(self.files(), ["run-cell.steps.jsonl", "run.2.pickle", "run.2.steps.jsonl",
                                        "run.pickle", "run.steps.jsonl"])
        self.assertEqual(self.steps(self.name + ".2.steps.jsonl"), [1, 2])


class Lightning(Case):
    def trainer(self, *callbacks, **kw):
        return fake_lightning.Trainer(callbacks, **kw)

    def step_oom(self, at):
        def step(i):
            torch.run_step()
            if i == at:
                torch.simulate_oom()
            return {"loss": 1.0}
        return step

    def test_lightning_fit_records_from_setup_to_teardown(self):
        cb = integrations.LightningCallback(self.name)
        self.assertIsInstance(cb, fake_lightning.Callback)
        trainer = self.trainer(cb, train_step=self.step_oom(-1), max_steps=3)
        with redirect_stderr(io.StringIO()):
            trainer.fit()
        hooks = trainer.hooks
        first = [c for c in torch.calls if c[0] == "record_memory_history"]
        self.assertEqual(first[0][2]["enabled"], "all")
        self.assertEqual(first[-1][2]["enabled"], None)
        self.assertLess(hooks.index("setup"), hooks.index("on_sanity_check_start"))  # recording by then
        self.assertEqual(self.steps(self.name + ".steps.jsonl"), [1, 2, 3])  # sanity batches not logged
        self.assertIn("[Callback]LightningCallback.setup", trainer.profiler.names)

    def test_lightning_oom_in_the_sanity_check(self):
        for version in ("2.1", "1.13"):
            torch.reset(version)
            torch.snapshot_source = OOM_PICKLE
            torch.script_steps(ROWS)
            fresh_capture()
            out = io.StringIO()
            cb = integrations.LightningCallback(self.name, out=out)
            trainer = self.trainer(cb, val_step=self.step_oom(1))
            with redirect_stderr(io.StringIO()), self.assertRaises(torch.cuda.OutOfMemoryError):
                trainer.fit()
            self.assertIn("on_exception", trainer.hooks)
            self.assertNotIn("teardown", trainer.hooks)  # _interrupt: no teardown hook
            self.assertEqual(self.files(), ["run.pickle"], version)
            self.assertIn("verdict: cap_limit", out.getvalue())
            self.assertIsNone(capture._active)
            os.remove(self.name + ".pickle")

    def test_lightning_validate_test_predict_record_under_their_own_names(self):
        cb = integrations.LightningCallback(self.name, doctor=False)
        with redirect_stderr(io.StringIO()):
            self.trainer(cb, val_batches=3).test()
            self.trainer(cb, val_batches=2).predict()
            with self.assertRaises(torch.cuda.OutOfMemoryError):
                self.trainer(cb, val_step=self.step_oom(1)).validate()
            self.trainer(cb, val_batches=2).test()  # continues its stage's log
        self.assertEqual(self.files(), ["run.predict.steps.jsonl", "run.test.steps.jsonl", "run.validate.pickle",
                                        "run.validate.steps.jsonl"])
        self.assertEqual(self.steps(self.name + ".test.steps.jsonl"), [0, 1, 2, 3, 4])
        self.assertEqual(self.steps(self.name + ".validate.steps.jsonl"), [0])

    def test_lightning_ddp_ranks_launched_lightnings_way(self):
        script = os.path.join("tests", "python", "frameworks", "lightning_ddp.py")
        env = {k: v for k, v in os.environ.items() if k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "NODE_RANK")}
        r = subprocess.run([sys.executable, script, self.tmp.name], env=env, capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.files(), ["plain.rank0.steps.jsonl", "plain.rank1.steps.jsonl",
                                        "run.rank0.steps.jsonl", "run.rank1.steps.jsonl"])
        for rank in (0, 1):
            self.assertEqual(self.steps(os.path.join(self.tmp.name, "run.rank%d.steps.jsonl" % rank)), [1, 2, 3, 4])
        for f in self.files():
            os.remove(os.path.join(self.tmp.name, f))
        r = subprocess.run([sys.executable, script, self.tmp.name, "1"], env=env, capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(r.returncode, 3, r.stderr)  # rank 1 died of the OOM
        self.assertEqual(self.files(), ["plain.rank0.steps.jsonl", "plain.rank1.steps.jsonl",
                                        "run.rank0.steps.jsonl", "run.rank1.pickle", "run.rank1.steps.jsonl"])

    def test_lightning_picklable(self):
        cls = integrations.LightningCallback
        cb = cls(self.name)
        trainer = self.trainer(cb)
        with redirect_stderr(io.StringIO()):
            fake_lightning._call_callback_hooks(trainer, "setup", stage=fake_lightning.TrainerFn.FITTING)
            copied = pickle.loads(pickle.dumps(cb))  # what a spawn launcher does
            fake_lightning._call_callback_hooks(trainer, "teardown", stage=fake_lightning.TrainerFn.FITTING)
        self.assertIs(type(copied), cls)
        self.assertIsNone(copied.recorder)


class DuckTyped(Case):
    frameworks_importable = False

    def test_duck_typed_without_the_frameworks(self):
        hf, pl = integrations.HFTrainerCallback(self.name), integrations.LightningCallback(self.name + "-pl")
        self.assertNotIsInstance(hf, fake_transformers.TrainerCallback)
        self.assertNotIsInstance(pl, fake_lightning.Callback)
        self.assertEqual(pl.state_key, "LightningCallback")
        with redirect_stderr(io.StringIO()):
            self.hf(hf, steps=2).train()  # every other event: a no-op
            fake_lightning.Trainer([pl], max_steps=2, train_step=lambda i: torch.run_step()).fit()
        self.assertEqual(self.files(), ["run-pl.steps.jsonl", "run.steps.jsonl"])

    def test_without_cuda_training_runs(self):
        torch.cuda_available = False
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            self.hf(integrations.HFTrainerCallback(self.name), steps=2).train()
            fake_lightning.Trainer([integrations.LightningCallback(self.name)], max_steps=2).fit()
        self.assertEqual(self.files(), [])
        self.assertEqual(len([x for x in w if "CUDA is not available" in str(x.message)]), 1)

    def test_the_classes_are_named_without_importing_a_framework(self):
        self.assertIn("HFTrainerCallback", dir(integrations))
        self.assertIn("LightningCallback", dir(integrations))
        self.assertNotIn("HFTrainerCallback", integrations.__dict__)  # made on first use only


if __name__ == "__main__":
    unittest.main()
