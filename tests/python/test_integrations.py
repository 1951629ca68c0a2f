"""Tests of oomdoc.integrations (HFTrainerCallback, LightningCallback) against stand-ins of
transformers' and Lightning's callback machinery (tests/python/frameworks, which call the
documented hook signatures) and the stand-in torch: steps logged, history on and off, and
on an OOM the snapshot written and doctor's verdict printed, the OOM itself re-raised.
Neither framework is imported by oomdoc. Run from the repository root."""
import io
import json
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stderr

ROOT = os.getcwd()
sys.path.insert(0, os.path.join(ROOT, "tests", "python", "standin"))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
sys.path.insert(0, os.path.join(ROOT, "python"))
import torch  # noqa: E402  (the stand-in)
import oomdoc  # noqa: E402
from oomdoc import capture, integrations  # noqa: E402
from frameworks import fake_lightning, fake_transformers  # noqa: E402

OOM_PICKLE = os.path.join(ROOT, "tests/data/snapshots/snap_train_oom.pickle")
ROWS = [(100 + i, 200 + i, 300 + i) for i in range(8)]


class Callbacks(unittest.TestCase):
    def setUp(self):
        torch.reset("2.1")
        torch.snapshot_source = OOM_PICKLE
        torch.script_steps(ROWS)
        capture._warned.clear()
        self.tmp = tempfile.TemporaryDirectory()
        self.name = os.path.join(self.tmp.name, "run")
        sys.modules.pop("transformers", None)
        sys.modules.pop("lightning.pytorch", None)

    def tearDown(self):
        self.tmp.cleanup()
        sys.modules.pop("transformers", None)
        sys.modules.pop("lightning.pytorch", None)

    def steps(self):
        with open(self.name + ".steps.jsonl") as f:
            return [json.loads(x)["step"] for x in f]

    def oom_at(self, n):
        def step(i):
            if i == n:
                torch.simulate_oom()
            return {"loss": 1.0}
        return step

    def test_hf_steps(self):
        cb = integrations.HFTrainerCallback(self.name)
        with redirect_stderr(io.StringIO()):
            fake_transformers.Trainer([cb], self.oom_at(-1), 3).train()
        self.assertEqual(self.steps(), [1, 2, 3])  # state.global_step after each step
        hist = [c for c in torch.calls if c[0] == "record_memory_history"]
        self.assertEqual(hist[-1][2]["enabled"], None)  # turned off at on_train_end

    def test_hf_oom_writes_snapshot_and_prints_the_verdict(self):
        for version in ("2.1", "2.0"):
            torch.reset(version)
            torch.snapshot_source = OOM_PICKLE
            torch.script_steps(ROWS)
            out = io.StringIO()
            cb = integrations.HFTrainerCallback(self.name, out=out)
            with redirect_stderr(io.StringIO()), self.assertRaises(torch.cuda.OutOfMemoryError):
                fake_transformers.Trainer([cb], self.oom_at(2), 5).train()
            self.assertTrue(os.path.exists(self.name + ".pickle"), version)
            self.assertEqual(cb.verdict["verdict"], "cap_limit")
            self.assertIn("cap_limit", out.getvalue())
            with redirect_stderr(io.StringIO()):
                cb._end()  # what sys.excepthook does when the OOM ends the script
            self.assertIs(sys.excepthook, sys.__excepthook__)
            os.remove(self.name + ".pickle")

    def test_hf_subclasses_the_real_base_when_imported(self):
        sys.modules["transformers"] = fake_transformers
        cb = integrations.HFTrainerCallback(self.name)
        self.assertIsInstance(cb, fake_transformers.TrainerCallback)
        self.assertIsInstance(cb, integrations.HFTrainerCallback)
        with redirect_stderr(io.StringIO()):
            fake_transformers.Trainer([cb], self.oom_at(-1), 2).train()
        self.assertEqual(self.steps(), [1, 2])

    def test_lightning_oom(self):
        sys.modules["lightning.pytorch"] = fake_lightning
        torch.reset("1.13")  # no observer: on_exception writes the snapshot
        torch.snapshot_source = OOM_PICKLE
        torch.script_steps(ROWS)
        out = io.StringIO()
        cb = integrations.LightningCallback(self.name, out=out)
        self.assertIsInstance(cb, fake_lightning.Callback)
        with redirect_stderr(io.StringIO()), self.assertRaises(torch.cuda.OutOfMemoryError):
            fake_lightning.Trainer([cb], self.oom_at(3), 6).fit()
        self.assertEqual(self.steps(), [1, 2, 3])
        self.assertTrue(os.path.exists(self.name + ".pickle"))
        self.assertEqual(cb.verdict["verdict"], "cap_limit")
        self.assertIn("verdict: cap_limit", out.getvalue())

    def test_lightning_duck_typed(self):
        cb = integrations.LightningCallback(self.name)
        self.assertNotIsInstance(cb, fake_lightning.Callback)
        with redirect_stderr(io.StringIO()):
            fake_lightning.Trainer([cb], self.oom_at(-1), 2).fit()
        self.assertEqual(self.steps(), [1, 2])

    def test_without_cuda_training_runs(self):
        torch.cuda_available = False
        import warnings
        with warnings.catch_warnings(record=True):
            warnings.simplefilter("always")
            fake_transformers.Trainer([integrations.HFTrainerCallback(self.name)], self.oom_at(-1), 2).train()
            fake_lightning.Trainer([integrations.LightningCallback(self.name)], self.oom_at(-1), 2).fit()
        self.assertEqual(os.listdir(self.tmp.name), [])


if __name__ == "__main__":
    unittest.main()
