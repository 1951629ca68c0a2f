"""Tests of oomdoc.record / on_oom / step / StepLogger (python/oomdoc/capture.py) with the
stand-in torch of tests/python/standin, under each supported release's signatures
(2.1+, 2.0, 1.13): the calls made, the files written, resume, failures that must not mask
the user's error, and the warnings without CUDA. Run from the repository root."""
import io
import json
import os
import pickle
import sys
import unittest
import warnings
from contextlib import redirect_stderr

ROOT = os.getcwd()
sys.path.insert(0, os.path.join(ROOT, "tests", "python", "standin"))
sys.path.insert(0, os.path.join(ROOT, "python"))
import torch  # noqa: E402  (the stand-in)
import oomdoc  # noqa: E402
from oomdoc import capture  # noqa: E402
from runcase import OOM_PICKLE, RunCase  # noqa: E402

ROWS = [(100 + i, 200 + i, 300 + i) for i in range(4)]


def history_calls():
    return [c for c in torch.calls if c[0] == "record_memory_history"]


class Versions(RunCase):
    def run_oom(self):
        torch.script_steps(ROWS)
        with redirect_stderr(io.StringIO()), self.assertRaises(torch.cuda.OutOfMemoryError):
            with oomdoc.record(self.name, max_entries=777):
                oomdoc.step()
                torch.simulate_oom()
        with open(self.name + ".pickle", "rb") as f:
            return pickle.load(f)

    def test_detects_each_signature(self):
        for v in ("2.1", "2.0", "1.13"):
            torch.use_version(v)
            self.assertEqual(oomdoc.torch_support(torch), v)

    def test_2_1(self):
        torch.use_version("2.1")
        snap = self.run_oom()
        self.assertEqual(history_calls()[0][2], {"enabled": "all", "context": "all", "stacks": "python",
                                                 "max_entries": 777, "device": None})
        self.assertEqual(history_calls()[-1][2], {"enabled": None, "device": None})
        self.assertEqual([c[0] for c in torch.calls if c[0] in ("dump_snapshot", "snapshot")], ["dump_snapshot"])
        self.assertIn("segments", snap)

    def test_2_0(self):
        torch.use_version("2.0")
        snap = self.run_oom()
        first, last = history_calls()[0], history_calls()[-1]
        self.assertEqual(first[1], (True,))
        self.assertEqual(first[2]["trace_alloc_max_entries"], 777)
        self.assertEqual(last[1], (False,))
        # no _dump_snapshot in 2.0: pickle.dump(_snapshot()) at the observer's call
        self.assertEqual([c[0] for c in torch.calls if c[0] in ("dump_snapshot", "snapshot")], ["snapshot"])
        self.assertEqual(snap, pickle.load(open(OOM_PICKLE, "rb")))

    def test_1_13(self):
        torch.use_version("1.13")
        snap = self.run_oom()  # no observer: dumped when the error leaves the block
        self.assertEqual(history_calls()[0][1:], ((True,), {"device": None}))
        self.assertEqual(history_calls()[-1][1:], ((False,), {"device": None}))
        self.assertIn("segments", snap)

    def test_unknown_signature_warns_and_runs_the_body(self):
        torch.memory._record_memory_history = lambda *, mode: None
        ran = []
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            with oomdoc.record(self.name):
                ran.append(1)
        self.assertEqual(ran, [1])
        msgs = [str(x.message) for x in w]
        self.assertTrue(any("not a signature oomdoc knows" in m for m in msgs), msgs)


class Behaviour(RunCase):
    def test_decorator(self):
        torch.script_steps(ROWS)

        @oomdoc.record(self.name)
        def train(n):
            for _ in range(n):
                oomdoc.step()
            return "done"

        with redirect_stderr(io.StringIO()):
            self.assertEqual(train(3), "done")
            self.assertEqual(train.__name__, "train")
        rows = [json.loads(x) for x in open(self.name + ".steps.jsonl")]
        self.assertEqual([r["step"] for r in rows], [0, 1, 2])

    def test_resume_appends_and_continues_step_numbers(self):
        torch.script_steps(ROWS * 3)
        with redirect_stderr(io.StringIO()):
            for _ in range(2):
                with oomdoc.record(self.name):
                    oomdoc.step()
                    oomdoc.step()
        rows = [json.loads(x) for x in open(self.name + ".steps.jsonl")]
        self.assertEqual([r["step"] for r in rows], [0, 1, 2, 3])

    def test_csv_resume_writes_the_header_once(self):
        torch.script_steps(ROWS * 3)
        with redirect_stderr(io.StringIO()):
            for _ in range(2):
                with oomdoc.record(self.name, steps_format="csv"):
                    oomdoc.step()
        lines = open(self.name + ".steps.csv").read().splitlines()
        self.assertEqual(lines[0], "step,allocated_bytes,reserved_bytes,peak_bytes")
        self.assertEqual([x.split(",")[0] for x in lines[1:]], ["0", "1"])

    def test_failed_dump_never_masks_the_oom(self):
        for v in ("2.1", "2.0", "1.13"):
            torch.reset(v)
            torch.snapshot_source = OOM_PICKLE
            torch.dump_fails = True
            capture._warned.clear()
            with warnings.catch_warnings(record=True) as w, redirect_stderr(io.StringIO()):
                warnings.simplefilter("always")
                with self.assertRaises(torch.cuda.OutOfMemoryError) as cm:
                    with oomdoc.record(self.name):
                        torch.simulate_oom()
            self.assertIn("CUDA out of memory", str(cm.exception))
            self.assertTrue(any("could not dump" in str(x.message) for x in w), v)

    def test_step_logger_on_its_own(self):
        torch.script_steps(ROWS)
        torch.cuda.reset_peak_memory_stats()  # the stand-in's steps advance from the 2nd reset
        log = oomdoc.StepLogger(self.name + ".csv")
        rows = [log.log() for _ in range(2)]
        log.close()
        self.assertEqual([r["allocated_bytes"] for r in rows], [ROWS[0][0], ROWS[1][0]])
        with open(self.name + ".csv") as f:
            self.assertEqual(f.readline().strip(), "step,allocated_bytes,reserved_bytes,peak_bytes")
        torch.cuda_available = False
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            self.assertIsNone(oomdoc.StepLogger(self.name + "2.jsonl").log())
        self.assertTrue(any("CUDA is not available" in str(x.message) for x in w))

    def test_on_oom(self):
        torch.use_version("2.0")

        @oomdoc.on_oom(os.path.join(self.tmp.name, "crash.pickle"))
        def boom():
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB.")

        with redirect_stderr(io.StringIO()) as err, self.assertRaises(torch.cuda.OutOfMemoryError):
            boom()
        self.assertTrue(os.path.exists(os.path.join(self.tmp.name, "crash.pickle")))
        self.assertIn("oomdoc doctor", err.getvalue())
        with self.assertRaises(ValueError):  # other errors: no dump, untouched
            with oomdoc.on_oom(os.path.join(self.tmp.name, "other.pickle")):
                raise ValueError("x")
        self.assertFalse(os.path.exists(os.path.join(self.tmp.name, "other.pickle")))

    def test_no_cuda_warns_once_naming_cuda_and_the_users_line(self):
        torch.cuda_available = False
        ran = []
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            for _ in range(3):
                with oomdoc.record(self.name):  # the line the warning must name
                    ran.append(1)
                    oomdoc.step()
        line = sys._getframe().f_lineno - 3
        self.assertEqual(ran, [1, 1, 1])
        hits = [x for x in w if "CUDA is not available" in str(x.message)]
        self.assertEqual(len(hits), 1)
        self.assertEqual((hits[0].filename, hits[0].lineno), (__file__, line))
        self.assertEqual(history_calls(), [])
        self.assertEqual(os.listdir(self.tmp.name), [])

    def test_no_torch_warns_and_runs_the_body(self):
        saved = sys.modules.pop("torch")
        sys.modules["torch"] = None  # import torch -> ImportError
        try:
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                with oomdoc.record(self.name):
                    ran = True
            self.assertTrue(ran)
            self.assertTrue(any("torch is not importable" in str(x.message) and "CUDA" in str(x.message)
                                for x in w))
        finally:
            sys.modules["torch"] = saved


if __name__ == "__main__":
    unittest.main()
