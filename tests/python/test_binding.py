"""Tests of the oomdoc package's binding (python/oomdoc/api.py, _binding.py): each function
returns exactly the document `oomdoc COMMAND --json` prints, computed in-process through
liboomdoc.so (ctypes) or, with OOMDOC_BACKEND=exec, through the binary; snapshot dicts are
read from memory; errors carry the CLI's exit codes; repr and _repr_html_.
Usage: python3 tests/python/test_binding.py OOMDOC (the binary to compare with), from the
repository root. The backend under test is the one the environment selects."""
import html
import json
import os
import pathlib
import pickle
import re
import tempfile
import subprocess
import sys
import unittest

ROOT = os.getcwd()
OOMDOC = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else os.path.join(ROOT, "oomdoc")
sys.path.insert(0, os.path.join(ROOT, "python"))
import oomdoc  # noqa: E402

SNAP = "examples/snap_train_oom.pickle"
FRAG = "tests/data/snapshots/frag_default.pickle"
CONFIG = "examples/configs/llama-160m.json"
MESSAGE = "tests/data/messages/torch22_other_process.txt"


def _read(path):
    with open(path) as f:
        return f.read()


def cli(*args):
    r = subprocess.run([OOMDOC] + list(args) + ["--json"], capture_output=True, text=True, timeout=300)
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout)


def cli_raw(*args, env=None):
    return subprocess.run([OOMDOC] + list(args), capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, **(env or {})))


class Binding(unittest.TestCase):
    def test_backend_and_versions(self):
        kind, path = oomdoc.backend()
        self.assertEqual(kind, os.environ.get("OOMDOC_BACKEND", "ctypes"), path)
        od = re.search(r'#define OD_VERSION "(.*)"', _read("include/oomdoc/od.h")).group(1)
        self.assertEqual(oomdoc.__version__, od)
        self.assertEqual(oomdoc.library_version(), od)
        self.assertEqual(oomdoc._binding.SONAME, "liboomdoc.so.%s" % od.split(".")[0])

    def test_doctor_is_the_cli_document(self):
        r = oomdoc.doctor(SNAP)
        self.assertIsInstance(r, dict)
        self.assertEqual(r["verdict"], "cap_limit")
        self.assertEqual(dict(r), cli("doctor", SNAP))
        self.assertEqual(r.exit_code, 0)

    def test_doctor_with_plan_flags(self):
        r = oomdoc.doctor(SNAP, "examples/snap_train_oom.log", gpu="h200")
        self.assertEqual(dict(r), cli("doctor", "--gpu", "h200", SNAP, "examples/snap_train_oom.log"))

    def test_snapshot_dict_in_memory(self):
        with open(SNAP, "rb") as f:
            snap = pickle.load(f)  # what torch.cuda.memory._snapshot() returns
        by_dict, by_path = oomdoc.doctor(snap), oomdoc.doctor(SNAP)
        self.assertEqual(by_dict["verdict"], "cap_limit")
        text = json.dumps(dict(by_dict))
        self.assertNotIn("/proc/self/fd", text)
        self.assertIn("<snapshot 1>", text)
        self.assertEqual(json.loads(text.replace("<snapshot 1>", SNAP)), dict(by_path))
        s = oomdoc.snapshot(snap)
        self.assertEqual(json.loads(json.dumps(dict(s)).replace("<snapshot 1>", SNAP)), cli("snapshot", SNAP))

    def test_torch_1_13_snapshot_list(self):
        path = "tests/data/extra/torch113_layout.pickle"
        with open(path, "rb") as f:
            segments = pickle.load(f)  # torch 1.13's _snapshot(): a list of segments
        self.assertIsInstance(segments, list)
        got = json.loads(json.dumps(dict(oomdoc.snapshot(segments))).replace("<snapshot 1>", path))
        self.assertEqual(got, cli("snapshot", path))
        self.assertIn("verdict", oomdoc.doctor(segments))

    def test_plan(self):
        r = oomdoc.plan(CONFIG, batch=8, seq=2048, gpu="h200")
        self.assertEqual(dict(r), cli("plan", "--config", CONFIG, "--batch", "8", "--seq", "2048", "--gpu", "h200"))
        with open(CONFIG) as f:
            by_dict = oomdoc.plan(json.load(f), batch=8, seq=2048, gpu="h200")
        for k in ("fits", "peak_bytes", "breakdown"):
            if k in r:
                self.assertEqual(by_dict[k], r[k], k)
        infer = oomdoc.plan("examples/configs/gpt2-355m.json", task="infer", batch=16, prompt=512,
                            new_tokens=256, kv_cache="dynamic", gpu="l4")
        self.assertEqual(dict(infer), cli("plan", "--config", "examples/configs/gpt2-355m.json", "--task",
                                          "infer", "--batch", "16", "--prompt", "512", "--new-tokens",
                                          "256", "--kv-cache", "dynamic", "--gpu", "l4"))

    def test_triage_path_and_text(self):
        want = cli("triage", MESSAGE)
        for path in (MESSAGE, pathlib.Path(MESSAGE)):  # a path is read, never taken for text
            self.assertEqual(dict(oomdoc.triage(path)), want)
        r = oomdoc.triage(text=_read(MESSAGE))
        self.assertEqual(r["reports"], want["reports"])
        self.assertEqual(r["input"], "<text 1>")
        with self.assertRaises(TypeError):
            oomdoc.triage()
        with self.assertRaises(TypeError):
            oomdoc.triage(MESSAGE, text="x")

    def test_every_function_takes_a_pathlike(self):
        P = pathlib.Path
        self.assertEqual(dict(oomdoc.doctor(P(SNAP))), cli("doctor", SNAP))
        self.assertEqual(dict(oomdoc.snapshot(P(SNAP))), cli("snapshot", SNAP))
        self.assertEqual(dict(oomdoc.plan(P(CONFIG))), cli("plan", "--config", CONFIG))
        self.assertEqual(dict(oomdoc.plan(config=P(CONFIG))), cli("plan", "--config", CONFIG))
        self.assertEqual(dict(oomdoc.replay(P(FRAG), capacity="2GiB")), cli("replay", "--capacity", "2GiB", FRAG))
        self.assertEqual(dict(oomdoc.diff(P(SNAP), P(FRAG))), cli("diff", SNAP, FRAG))
        steps = "tests/data/extracted/leak_eval_no_grad_steps.csv"
        self.assertEqual(dict(oomdoc.trend(P(steps))), cli("trend", steps))
        self.assertEqual(oomdoc.trend(text=_read(steps))["verdict"], cli("trend", steps)["verdict"])

    def test_plan_model_and_config(self):
        gptq = "tests/data/safetensors/tiny-gptq"
        flags = ["--task", "infer", "--batch", "4", "--prompt", "128", "--new-tokens", "64", "--gpu", "t4"]
        want = cli("plan", "--model", gptq, *flags)
        kw = dict(task="infer", batch=4, prompt=128, new_tokens=64, gpu="t4")
        self.assertEqual(dict(oomdoc.plan(model=gptq, **kw)), want)
        self.assertEqual(dict(oomdoc.plan(gptq, **kw)), want)  # a directory is a model
        # ORG/NAME from the local Hugging Face cache, as the CLI looks it up.
        os.environ["HF_HOME"] = "tests/data/safetensors/hfcache"
        try:
            got = oomdoc.plan(model="tiny-org/tiny-llama", task="infer", gpu="t4")
            self.assertEqual(dict(got), cli("plan", "--model", "tiny-org/tiny-llama", "--task", "infer", "--gpu", "t4"))
            with self.assertRaises(oomdoc.OomdocError) as cm:
                oomdoc.plan(model="tiny-org/not-downloaded", gpu="t4")
            r = cli_raw("plan", "--model", "tiny-org/not-downloaded", "--gpu", "t4")
            self.assertEqual((cm.exception.exit_code, str(cm.exception)), (r.returncode, r.stderr.strip()))
        finally:
            del os.environ["HF_HOME"]
        with self.assertRaises(TypeError):
            oomdoc.plan(CONFIG, model=gptq)

    def test_nul_in_a_path_is_a_value_error(self):
        # ctypes would hand C "examples/snap_train_oom.pickle" and read that file instead.
        for call in (lambda: oomdoc.doctor(SNAP + "\0.txt"), lambda: oomdoc.triage(MESSAGE + "\0x"),
                     lambda: oomdoc.plan(model="a\0b"), lambda: oomdoc.snapshot(pathlib.Path(SNAP + "\0"))):
            with self.assertRaises(ValueError) as cm:
                call()
            self.assertIn("NUL", str(cm.exception))

    def test_report(self):
        page = oomdoc.report(SNAP, "examples/snap_train_oom.log")
        self.assertEqual(page, cli_raw("report", SNAP, "examples/snap_train_oom.log").stdout)
        self.assertIsNone(page.path)
        with tempfile.TemporaryDirectory() as tmp:
            out = pathlib.Path(tmp) / "r.html"
            with open(SNAP, "rb") as f:
                written = oomdoc.report(pickle.load(f), out=out)
            self.assertEqual(written.path, str(out))
            self.assertEqual(out.read_text(), str(written))
            self.assertIn("&lt;snapshot 1&gt;", written)  # the label, not /proc/self/fd/N
            self.assertNotIn("/proc/self/fd", written)
        self.assertTrue(page._repr_html_().startswith("<iframe srcdoc="))
        with self.assertRaises(oomdoc.OomdocError) as cm:
            oomdoc.report("tests/no/such.pickle")
        self.assertEqual(cm.exception.exit_code, 3)

    def test_replay(self):
        r = oomdoc.replay(FRAG, settings="expandable_segments:True", capacity="2GiB")
        self.assertEqual(dict(r), cli("replay", "--set", "expandable_segments:True", "--capacity", "2GiB", FRAG))
        d = oomdoc.replay(FRAG, settings={"expandable_segments": "True"}, capacity="2GiB")
        self.assertEqual(d["settings"], "expandable_segments:True")

    def test_errors_carry_exit_codes(self):
        with self.assertRaises(oomdoc.OomdocError) as cm:
            oomdoc.doctor("tests/no/such/file.pickle")
        self.assertEqual(cm.exception.exit_code, 3)
        self.assertIn("no/such/file.pickle", str(cm.exception))
        with self.assertRaises(oomdoc.OomdocError) as cm:
            oomdoc.plan(CONFIG, no_such_flag=3)
        self.assertEqual(cm.exception.exit_code, 2)
        with self.assertRaises(oomdoc.OomdocError) as cm:
            oomdoc.snapshot(b"not a pickle")
        self.assertEqual(cm.exception.exit_code, 3)

    def test_calls_after_a_stopped_option_scan(self):
        # snapshot -hx stops getopt inside "-hx"; the next call's parse must start over.
        for argv in (["snapshot", "-hx"], ["snapshot", "-h"], ["plan", "--json", "--bogus"]):
            oomdoc._binding.run(argv)
            self.assertEqual(dict(oomdoc.snapshot(SNAP, top=3)), cli("snapshot", "--top", "3", SNAP))

    def test_repr_and_html(self):
        r = oomdoc.doctor(SNAP)
        text = repr(r)
        self.assertEqual(text, cli_raw("doctor", SNAP).stdout.rstrip("\n"))  # the report, not the dict
        page = r.html()
        self.assertEqual(page, cli_raw("report", SNAP).stdout)
        shown = r._repr_html_()
        self.assertTrue(shown.startswith("<iframe srcdoc="), shown[:80])
        self.assertEqual(html.unescape(shown.split('srcdoc="', 1)[1].split('" style=', 1)[0]), page)
        # As tall as the page: an estimate from its plots and lines, then measured on load.
        height = int(re.search(r"height:(\d+)px", shown).group(1))
        self.assertGreater(height, 1000)
        self.assertIn("getBoundingClientRect", html.unescape(shown.split('onload="', 1)[1]))
        with open(SNAP, "rb") as f:
            page = oomdoc.snapshot(pickle.load(f)).html()
        self.assertIn("<svg", page)
        self.assertNotIn("/proc/self/fd", page)
        self.assertIn("<snapshot 1>", html.unescape(page))

    def test_doctor_text_from_the_same_run(self):
        # Where the library prints doctor's text from its --json document
        # (od_diagnosis_text_json), repr() runs no second diagnosis.
        calls = []
        real = oomdoc._binding._run_one

        def counting(argv, files):
            calls.append(argv[0])
            return real(argv, files)
        oomdoc._binding._run_one = counting
        try:
            r = oomdoc.doctor(SNAP, "examples/snap_train_oom.log")
            text = repr(r)
        finally:
            oomdoc._binding._run_one = real
        lib = oomdoc._binding._backend[2]
        same_run = lib is not None and hasattr(lib, "od_diagnosis_text_json")
        self.assertEqual(calls, ["doctor"] if same_run else ["doctor", "doctor"])
        self.assertTrue(text.startswith("verdict: cap_limit\n"), text[:80])
        self.assertIn("\ndo now\n  1. ", text)

    def test_html_shows_the_real_page_or_the_real_error(self):
        # doctor's page is `oomdoc report` with doctor's inputs and every option given.
        r = oomdoc.doctor(SNAP, "examples/snap_train_oom.log", gpu="h200")
        want = cli_raw("report", "--gpu", "h200", SNAP, "examples/snap_train_oom.log")
        shown = r._repr_html_()
        if want.returncode in (0, 1):
            self.assertEqual(r.html(), want.stdout)
            self.assertTrue(shown.startswith("<iframe srcdoc="))
        else:
            # report refuses the option: the page says so, with report's own message, and
            # shows the text report below it (not a silent fallback).
            with self.assertRaises(oomdoc.OomdocError) as cm:
                r.html()
            self.assertEqual((cm.exception.exit_code, str(cm.exception)), (want.returncode, want.stderr.strip()))
            self.assertIn("oomdoc report failed (exit %d)" % want.returncode, shown)
            self.assertIn(html.escape(want.stderr.strip()), shown)
            self.assertIn(html.escape(repr(r).splitlines()[0]), shown)

    def test_plan_and_triage_show_tables(self):
        plan = oomdoc.plan(CONFIG, batch=8, seq=2048, gpu="h200")
        self.assertIsNone(plan.html())
        shown = plan._repr_html_()
        text = cli_raw("plan", "--config", CONFIG, "--batch", "8", "--seq", "2048", "--gpu", "h200").stdout
        self.assertIn("<table>", shown)
        # The table's figures are the text report's, formatted alike.
        params = re.search(r"^  parameters +(\S+ \S+)$", text, re.M).group(1)
        self.assertIn("<td style=\"text-align:left\">parameters</td><td style=\"text-align:right;white-space:nowrap\">%s</td>" % params,
                      shown)
        self.assertIn(re.search(r"^peak allocated (\S+ \S+)", text, re.M).group(1), shown)
        tri = oomdoc.triage(MESSAGE)._repr_html_()
        self.assertIn("<table>", tri)
        verdict = cli("triage", MESSAGE)["reports"][0]["verdict"]["name"]
        self.assertIn(">%s</td>" % verdict, tri)

    def test_threads(self):
        # ctypes releases the GIL; the library serializes captures, each gets its own output.
        from concurrent.futures import ThreadPoolExecutor
        want = {SNAP: cli("doctor", SNAP), FRAG: cli("doctor", FRAG)}
        with ThreadPoolExecutor(4) as pool:
            got = list(pool.map(lambda p: (p, dict(oomdoc.doctor(p))), [SNAP, FRAG] * 4))
        for p, doc in got:
            self.assertEqual(doc, want[p], p)

    def test_integrations_come_with_import(self):
        self.assertIn("HFTrainerCallback", dir(oomdoc.integrations))
        self.assertIn("LightningCallback", dir(oomdoc.integrations))
        self.assertNotIn("transformers", sys.modules)  # named, not made: nothing imported
        self.assertNotIn("lightning", sys.modules)


if __name__ == "__main__":
    unittest.main()
