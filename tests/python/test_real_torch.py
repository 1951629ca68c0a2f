"""Tests of the oomdoc package beside a real torch: Debian's python3-torch (torch 1.13, CPU
build), run by Debian's /usr/bin/python3 (tests/suites/python_real_torch.sh). Checks: import
beside torch, the release detection from the real signature, record() on a machine without
CUDA (one warning naming CUDA and this file's line, the body runs, no TypeError), an
OutOfMemoryError whose dump fails is re-raised untouched, and a snapshot dict (loaded from a
fixture with pickle) read by the binding in this process, and both callbacks driven by the
stand-ins of transformers' and Lightning's machinery (tests/python/frameworks) over the real
torch: training runs, one clear warning, nothing written, the callbacks pickle, the rank
comes from the launcher's environment (torch.distributed is present but not initialized).
Run from the repository root."""
import os
import pickle
import sys
import tempfile
import unittest
import warnings

ROOT = os.getcwd()
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))  # the frameworks' stand-ins only
import torch  # noqa: E402  (the real one)
import oomdoc  # noqa: E402
from oomdoc import capture, integrations  # noqa: E402
from frameworks import fake_lightning, fake_transformers  # noqa: E402


class RealTorch(unittest.TestCase):
    def setUp(self):
        capture._warned.clear()
        self.tmp = tempfile.TemporaryDirectory()
        self.name = os.path.join(self.tmp.name, "run")

    def tearDown(self):
        self.tmp.cleanup()

    def test_import_and_version_detection(self):
        self.assertFalse(hasattr(torch, "_is_oomdoc_standin"))
        self.assertTrue(torch.__version__.startswith("1.13"), torch.__version__)
        self.assertEqual(oomdoc.torch_support(), "1.13")
        self.assertTrue(hasattr(oomdoc, "integrations"))

    def test_record_without_cuda(self):
        self.assertFalse(torch.cuda.is_available())
        ran = 0
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            for _ in range(2):
                with oomdoc.record(self.name, max_entries=1000):  # the line warned about
                    ran += 1
                    oomdoc.step()
        line = sys._getframe().f_lineno - 3
        self.assertEqual(ran, 2)
        hits = [x for x in w if "CUDA" in str(x.message)]
        self.assertEqual(len(hits), 1, [str(x.message) for x in w])
        self.assertEqual((hits[0].filename, hits[0].lineno), (__file__, line))
        self.assertEqual(os.listdir(self.tmp.name), [])

    def test_decorated_function_runs(self):
        @oomdoc.record(self.name)
        def train():
            return torch.ones(3).sum().item()

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.assertEqual(train(), 3.0)

    def test_oom_reraised_when_the_dump_fails(self):
        # No CUDA: torch 1.13's _snapshot() cannot run; the user's error must come out.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with self.assertRaises(torch.cuda.OutOfMemoryError) as cm:
                with oomdoc.on_oom(self.name + ".pickle"):
                    raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        self.assertIn("Tried to allocate", str(cm.exception))

    def test_callbacks_degrade_clearly_without_cuda(self):
        sys.modules["transformers"] = fake_transformers
        sys.modules["lightning.pytorch"] = fake_lightning
        for cls in ("HFTrainerCallback", "LightningCallback"):
            integrations.__dict__.pop(cls, None)
        try:
            hf = integrations.HFTrainerCallback(self.name)
            pl = integrations.LightningCallback(self.name)
            self.assertIsInstance(hf, fake_transformers.TrainerCallback)
            self.assertIsInstance(pl, fake_lightning.Callback)
            ran = []
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                steps = fake_transformers.Trainer([hf], lambda bs, step: ran.append(torch.ones(bs).sum().item()),
                                                  3, batch_size=4).train()
                fake_lightning.Trainer([pl], train_step=lambda i: ran.append(i), max_steps=2).fit()
            self.assertEqual((steps, len(ran)), (3, 5))
            msgs = [str(x.message) for x in w if "oomdoc" in str(x.message)]
            self.assertEqual(len(msgs), 1, msgs)
            self.assertIn("CUDA is not available (torch %s sees no GPU)" % torch.__version__, msgs[0])
            self.assertEqual(os.listdir(self.tmp.name), [])
            self.assertIsNone(capture._active)
            for cb in (hf, pl):
                self.assertIs(type(pickle.loads(pickle.dumps(cb))), type(cb))
        finally:
            for mod in ("transformers", "lightning.pytorch"):
                sys.modules.pop(mod, None)
            for cls in ("HFTrainerCallback", "LightningCallback"):
                integrations.__dict__.pop(cls, None)

    def test_real_torch_oom_type_and_rank(self):
        self.assertTrue(capture._is_oom(torch, torch.cuda.OutOfMemoryError("CUDA out of memory.")))
        self.assertFalse(capture._is_oom(torch, ValueError("out of memory")))
        self.assertFalse(torch.distributed.is_initialized())
        os.environ.update(LOCAL_RANK="1", NODE_RANK="0", WORLD_SIZE="2")  # Lightning's launcher
        try:
            self.assertEqual(capture.process_rank(torch), "1")
        finally:
            for k in ("LOCAL_RANK", "NODE_RANK", "WORLD_SIZE"):
                del os.environ[k]
        self.assertIsNone(capture.process_rank(torch))

    def test_snapshot_dict_through_the_binding(self):
        self.assertEqual(oomdoc.backend()[0], "ctypes")
        with open("examples/snap_train_oom.pickle", "rb") as f:
            snap = pickle.load(f)
        r = oomdoc.doctor(snap)
        self.assertEqual(r["verdict"], "cap_limit")
        self.assertEqual(oomdoc.snapshot(snap)["schema_version"], 1)
        self.assertEqual(os.listdir(self.tmp.name), [])


if __name__ == "__main__":
    unittest.main()
