"""Tests of python/oomdoc_hook.py (now a shim over the oomdoc package's capture code) with
the stand-in torch of tests/python/standin: the calls it makes, the files it writes and
their formats. Memory figures are the real ones of
tests/data/snapshots/leak_eval_no_grad.json's step_log (allocated, reserved), and the
snapshot torch "writes" is the real OOM snapshot tests/data/snapshots/snap_train_oom.pickle.
Run from the repository root."""
import io
import json
import os
import sys
import unittest
import warnings
from contextlib import redirect_stderr

ROOT = os.getcwd()
sys.path.insert(0, os.path.join(ROOT, "tests", "python", "standin"))
sys.path.insert(0, os.path.join(ROOT, "python"))
import torch  # noqa: E402  (the stand-in)
import oomdoc_hook  # noqa: E402
from runcase import OOM_PICKLE, RunCase  # noqa: E402

FIX = json.load(open(os.path.join(ROOT, "tests/data/snapshots/leak_eval_no_grad.json")))
# Step rows as the real run measured them; peak: the leak fixture logs none, so the test
# uses allocated + 1 GiB as a stand-in figure for max_memory_allocated().
ROWS = [(s["allocated"], s["reserved"], s["allocated"] + (1 << 30)) for s in FIX["step_log"]]


class Hook(RunCase):

    def lines(self, path):
        with open(path) as f:
            return f.read().splitlines()

    def test_step_log_jsonl(self):
        torch.script_steps(ROWS)
        err = io.StringIO()
        with redirect_stderr(err):
            with oomdoc_hook.record(self.name, max_entries=123) as rec:
                for _ in ROWS:
                    torch.run_step()
                    oomdoc_hook.step()
        hist = [c for c in torch.calls if c[0] == "record_memory_history"]
        self.assertEqual(hist[0][2], {"enabled": "all", "context": "all", "stacks": "python",
                                      "max_entries": 123, "device": None})
        self.assertEqual(hist[-1][2], {"enabled": None, "device": None})  # turned off at exit
        rows = [json.loads(x) for x in self.lines(self.name + ".steps.jsonl")]
        self.assertEqual(len(rows), len(ROWS))
        for i, (row, want) in enumerate(zip(rows, ROWS)):
            self.assertEqual(list(row), ["step", "allocated_bytes", "reserved_bytes", "peak_bytes"])
            self.assertEqual(row["step"], i)
            self.assertEqual((row["allocated_bytes"], row["reserved_bytes"], row["peak_bytes"]), want)
        # The leak's peaks rise every step, so each is the step's own; the process's peak
        # counters are never reset (other code reads them).
        self.assertEqual([c for c in torch.calls if c[0] == "reset_peak_memory_stats"], [])
        self.assertFalse(os.path.exists(rec.snapshot_path))  # no OOM: no snapshot
        self.assertIn("oomdoc doctor %s.steps.jsonl" % self.name, err.getvalue())

    def test_step_log_csv_and_explicit_steps(self):
        torch.script_steps(ROWS[:3])
        with redirect_stderr(io.StringIO()):
            with oomdoc_hook.record(self.name, steps_format="csv"):
                for s in (10, 20, 30):
                    torch.run_step()
                    oomdoc_hook.step(s)
        lines = self.lines(self.name + ".steps.csv")
        self.assertEqual(lines[0], "step,allocated_bytes,reserved_bytes,peak_bytes")
        self.assertEqual(lines[1:], ["%d,%d,%d,%d" % ((s,) + r) for s, r in zip((10, 20, 30), ROWS[:3])])

    def test_oom_observer_dumps_at_the_moment_of_oom(self):
        torch.script_steps(ROWS)
        err = io.StringIO()
        with redirect_stderr(err), self.assertRaises(torch.OutOfMemoryError):
            with oomdoc_hook.record(self.name) as rec:
                for _ in range(2):
                    torch.run_step()
                    oomdoc_hook.step()
                torch.simulate_oom()
        dumps = [c for c in torch.calls if c[0] == "dump_snapshot"]
        self.assertEqual(len(dumps), 1)  # by the observer, not again when the error left
        self.assertEqual(dumps[0][1], self.name + ".pickle")
        with open(self.name + ".pickle", "rb") as a, open(OOM_PICKLE, "rb") as b:
            self.assertEqual(a.read(), b.read())
        self.assertEqual(len(self.lines(self.name + ".steps.jsonl")), 2)
        self.assertIn("next: oomdoc doctor %s.pickle %s.steps.jsonl" % (self.name, self.name), err.getvalue())
        # After the block nothing records: a later OOM dumps nothing.
        with self.assertRaises(torch.OutOfMemoryError):
            torch.simulate_oom()
        self.assertEqual(len([c for c in torch.calls if c[0] == "dump_snapshot"]), 1)

    def test_oom_without_observer_dumps_when_the_error_leaves(self):
        del torch._C._cuda_attach_out_of_memory_observer
        with redirect_stderr(io.StringIO()), self.assertRaises(torch.cuda.OutOfMemoryError):
            with oomdoc_hook.record(self.name):
                raise torch.cuda.OutOfMemoryError("CUDA out of memory.")
        self.assertTrue(os.path.exists(self.name + ".pickle"))

    def test_other_errors_pass_through_without_a_dump(self):
        with redirect_stderr(io.StringIO()), self.assertRaises(ValueError):
            with oomdoc_hook.record(self.name):
                raise ValueError("not memory")
        self.assertFalse(os.path.exists(self.name + ".pickle"))
        self.assertFalse([c for c in torch.calls if c[0] == "dump_snapshot"])

    def test_without_cuda_warns_once_and_does_nothing(self):
        torch.cuda_available = False
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            for _ in range(2):
                with oomdoc_hook.record(self.name):
                    oomdoc_hook.step()
        self.assertEqual(len([x for x in w if "CUDA is not available" in str(x.message)]), 1)
        self.assertEqual(torch.calls, [])
        self.assertEqual(os.listdir(self.tmp.name), [])

    def test_torch_2_0_history_signature(self):
        torch.use_version("2.0")
        with redirect_stderr(io.StringIO()):
            with oomdoc_hook.record(self.name, max_entries=5000):
                pass
        hist = [c for c in torch.calls if c[0] == "record_memory_history"]
        self.assertEqual(hist[0][1], (True,))
        self.assertEqual(hist[0][2]["trace_alloc_max_entries"], 5000)
        self.assertEqual(hist[-1][1], (False,))

    def test_each_rank_its_own_files(self):
        os.environ.update(RANK="3", WORLD_SIZE="8")
        torch.script_steps(ROWS[:1])
        with redirect_stderr(io.StringIO()):
            with oomdoc_hook.record(self.name) as rec:
                torch.run_step()
                oomdoc_hook.step()
        self.assertEqual(rec.steps_path, self.name + ".rank3.steps.jsonl")
        self.assertTrue(os.path.exists(rec.steps_path))

    def test_step_outside_record_is_ignored(self):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            oomdoc_hook.step()
        self.assertIn("outside", str(w[0].message))
        self.assertEqual(torch.calls, [])


if __name__ == "__main__":
    unittest.main()
