"""Tests of oomdoc.record / on_oom / step / StepLogger (python/oomdoc/capture.py) with the
stand-in torch of tests/python/standin, under each supported release's signatures
(2.1+, 2.0, 1.13): the calls made, the files written, resume, failures that must not mask
the user's error, and the warnings without CUDA. Run from the repository root."""
import io
import json
import os
import pathlib
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
                torch.run_step()
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
                torch.run_step()
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
                    for _ in range(2):
                        torch.run_step()
                        oomdoc.step()
        rows = [json.loads(x) for x in open(self.name + ".steps.jsonl")]
        self.assertEqual([r["step"] for r in rows], [0, 1, 2, 3])

    def test_csv_resume_writes_the_header_once(self):
        torch.script_steps(ROWS * 3)
        with redirect_stderr(io.StringIO()):
            for _ in range(2):
                with oomdoc.record(self.name, steps_format="csv"):
                    torch.run_step()
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
        log = oomdoc.StepLogger(pathlib.Path(self.name + ".csv"), torch=torch)  # a Path is a path
        rows = []
        for _ in range(2):
            torch.run_step()
            rows.append(log.log())
        log.close()
        self.assertEqual([r["allocated_bytes"] for r in rows], [ROWS[0][0], ROWS[1][0]])
        with open(self.name + ".csv") as f:
            self.assertEqual(f.readline().strip(), "step,allocated_bytes,reserved_bytes,peak_bytes")
        torch.cuda_available = False
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            self.assertIsNone(oomdoc.StepLogger(self.name + "2.jsonl").log())
        self.assertTrue(any("CUDA is not available" in str(x.message) for x in w))

    def test_peak_without_resetting_the_counters(self):
        # Each step's own peak: 300 (rises), 500 (rises), 400 (below 500: unknown), 600.
        torch.script_steps([(100, 200, 300), (110, 210, 500), (120, 220, 400), (130, 230, 600)])
        with redirect_stderr(io.StringIO()):
            with oomdoc.record(self.name, steps_format="csv"):
                for _ in range(4):
                    torch.run_step()
                    oomdoc.step()
        self.assertEqual([c for c in torch.calls if c[0] == "reset_peak_memory_stats"], [])
        self.assertEqual(torch.cuda.max_memory_allocated(), 600)  # what other code reads
        lines = open(self.name + ".steps.csv").read().splitlines()
        self.assertEqual(lines[1:], ["0,100,200,300", "1,110,210,500", "2,120,220,", "3,130,230,600"])
        # Someone else resets the counters (the HF Trainer's memory tracker does at each
        # stage): the mark falls, so that step's peak is unknown, and later rises count.
        torch.script_steps([(100, 200, 300), (100, 200, 250), (100, 200, 280)])
        log = oomdoc.StepLogger(self.name + ".jsonl", torch=torch)
        torch.run_step()
        self.assertEqual(log.log()["peak_bytes"], 300)
        torch.cuda.reset_peak_memory_stats()
        torch.run_step()
        self.assertIsNone(log.log()["peak_bytes"])
        torch.run_step()
        self.assertEqual(log.log()["peak_bytes"], 280)
        log.close()

    def test_each_oom_its_own_numbered_snapshot(self):
        # An OOM caught inside the block (a batch skipped, a batch size halved), work goes
        # on, a second OOM, then a third with no step between: three snapshots.
        torch.script_steps(ROWS)
        err = io.StringIO()
        with redirect_stderr(err):
            with oomdoc.record(self.name) as rec:
                torch.run_step()
                oomdoc.step()
                for _ in range(2):
                    with self.assertRaises(torch.cuda.OutOfMemoryError):
                        torch.simulate_oom()
                    torch.run_step()
                    oomdoc.step()
                with self.assertRaises(torch.cuda.OutOfMemoryError):
                    torch.simulate_oom()
                with self.assertRaises(torch.cuda.OutOfMemoryError):
                    torch.simulate_oom()
        dumps = [c[1] for c in torch.calls if c[0] == "dump_snapshot"]
        n = self.name
        self.assertEqual(dumps, [n + ".pickle", n + ".2.pickle", n + ".3.pickle", n + ".4.pickle"])
        self.assertEqual(sorted(os.listdir(self.tmp.name)),
                         ["run.2.pickle", "run.2.steps.jsonl", "run.3.pickle", "run.3.steps.jsonl",
                          "run.4.pickle", "run.pickle", "run.steps.jsonl"])
        self.assertEqual(rec.attempt.k, 4)
        self.assertIn("next: oomdoc doctor %s.2.pickle %s.2.steps.jsonl" % (n, n), err.getvalue())

    def test_a_rerun_after_an_oom_does_not_overwrite_it(self):
        # A notebook cell run again in the same process: the second run's OOM is run.2.
        torch.script_steps(ROWS)
        for _ in range(2):
            with redirect_stderr(io.StringIO()), self.assertRaises(torch.cuda.OutOfMemoryError):
                with oomdoc.record(self.name):
                    torch.run_step()
                    oomdoc.step()
                    torch.simulate_oom()
        self.assertEqual(sorted(os.listdir(self.tmp.name)),
                         ["run.2.pickle", "run.2.steps.jsonl", "run.pickle", "run.steps.jsonl"])
        # A run that ends without an OOM leaves the numbering where it is (its step log
        # is the one a later run continues).
        with redirect_stderr(io.StringIO()):
            with oomdoc.record(self.name):
                torch.run_step()
                oomdoc.step()
        self.assertEqual(len(open(self.name + ".3.steps.jsonl").readlines()), 1)

    def test_a_later_record_after_an_unfinished_one_records(self):
        # The first record() was never exited (a generator abandoned, an __enter__ by
        # hand); a record() begun by a callback takes over instead of being ignored.
        self.assertIsNone(capture._active)
        torch.script_steps(ROWS)
        with redirect_stderr(io.StringIO()):
            with oomdoc.record(self.name):
                with warnings.catch_warnings(record=True) as w:
                    warnings.simplefilter("always")
                    with oomdoc.record(self.name + "-inner") as inner:
                        torch.run_step()
                        oomdoc.step()
        self.assertTrue(any("that one records" in str(x.message) for x in w))
        self.assertEqual(inner.name, self.name)  # the outer recording took the step
        self.assertTrue(os.path.exists(self.name + ".steps.jsonl"))

    def test_nul_in_a_path_is_a_clear_error(self):
        for make in (lambda: oomdoc.record("run\0x"), lambda: oomdoc.on_oom("a\0.pickle"),
                     lambda: oomdoc.StepLogger("s\0.jsonl")):
            with self.assertRaises(ValueError) as cm:
                make()
            self.assertIn("NUL", str(cm.exception))

    def test_on_oom_keeps_the_users_exception_when_str_fails(self):
        class Odd(torch.cuda.OutOfMemoryError):
            def __str__(self):
                raise RuntimeError("str() of this error fails")

        class Weird(RuntimeError):
            def __str__(self):
                raise TypeError("no message")

        for exc in (Odd("x"), Weird("y")):
            with warnings.catch_warnings(), redirect_stderr(io.StringIO()):
                warnings.simplefilter("ignore")
                with self.assertRaises(type(exc)) as cm:
                    with oomdoc.on_oom(os.path.join(self.tmp.name, "crash.pickle")):
                        raise exc
                self.assertIs(cm.exception, exc)
                with self.assertRaises(type(exc)) as cm:
                    with oomdoc.record(self.name):
                        raise exc
                self.assertIs(cm.exception, exc)

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

    def test_ranks_from_torchrun_lightning_and_torch_distributed(self):
        # (environment, rank in the file names): torchrun sets RANK; Lightning's launcher
        # only LOCAL_RANK, NODE_RANK and WORLD_SIZE (lightning/fabric/strategies/launchers/
        # subprocess_script.py @ 48e0597, _call_children_scripts); rank 0 is named too.
        cases = [({"RANK": "3", "WORLD_SIZE": "8"}, "3"),
                 ({"RANK": "0", "WORLD_SIZE": "8"}, "0"),
                 ({"LOCAL_RANK": "1", "NODE_RANK": "0", "WORLD_SIZE": "2"}, "1"),
                 ({"LOCAL_RANK": "0", "NODE_RANK": "0", "WORLD_SIZE": "2"}, "0"),
                 ({"LOCAL_RANK": "1", "NODE_RANK": "1", "WORLD_SIZE": "4", "LOCAL_WORLD_SIZE": "2"}, "3"),
                 ({"LOCAL_RANK": "1", "NODE_RANK": "1", "WORLD_SIZE": "4"}, "node1-local1"),
                 ({"LOCAL_RANK": "0", "WORLD_SIZE": "1"}, None),
                 ({}, None)]
        for env, rank in cases:
            for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "NODE_RANK", "LOCAL_WORLD_SIZE"):
                os.environ.pop(k, None)
            os.environ.update(env)
            self.assertEqual(capture.process_rank(torch), rank, env)
            with redirect_stderr(io.StringIO()):
                with oomdoc.record(self.name) as rec:
                    pass
            self.assertEqual(rec.name, self.name + (".rank" + rank if rank else ""), env)
        # torch.distributed, once initialized, outranks the environment.
        os.environ.update(RANK="5", WORLD_SIZE="8")
        torch.dist_rank, torch.dist_world = 2, 4
        self.assertEqual(capture.process_rank(torch), "2")
        torch.dist_rank, torch.dist_world = 0, 1
        self.assertIsNone(capture.process_rank(torch))

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
