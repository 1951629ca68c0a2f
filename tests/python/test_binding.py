"""Tests of the oomdoc package's binding (python/oomdoc/api.py, _binding.py): each function
returns exactly the document `oomdoc COMMAND --json` prints, computed in-process through
liboomdoc.so (ctypes) or, with OOMDOC_BACKEND=exec, through the binary; snapshot dicts are
read from memory; errors carry the CLI's exit codes; repr and _repr_html_.
Usage: python3 tests/python/test_binding.py OOMDOC (the binary to compare with), from the
repository root. The backend under test is the one the environment selects."""
import html
import json
import os
import pickle
import re
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

    def test_triage_text(self):
        text = _read(MESSAGE)
        r = oomdoc.triage(text)
        want = cli("triage", MESSAGE)
        self.assertEqual(r["reports"], want["reports"])
        self.assertEqual(r["input"], "<text 1>")

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
        self.assertIn("cap_limit", text)
        self.assertFalse(text.lstrip().startswith("{"))  # the report, not the dict
        page = r.html()
        self.assertIn("<svg", page)
        shown = r._repr_html_()
        self.assertTrue(shown.startswith("<iframe srcdoc="), shown[:80])
        self.assertIn("&lt;svg", shown)
        self.assertEqual(html.unescape(shown.split('srcdoc="', 1)[1].split('" style=', 1)[0]), page)
        with open(SNAP, "rb") as f:
            page = oomdoc.snapshot(pickle.load(f)).html()
        self.assertIn("<svg", page)
        self.assertNotIn("/proc/self/fd", page)
        self.assertIn("<snapshot 1>", html.unescape(page))
        plan = oomdoc.plan(CONFIG)
        self.assertIsNone(plan.html())
        self.assertTrue(plan._repr_html_().startswith("<pre>"))

    def test_threads(self):
        # ctypes releases the GIL; the library serializes captures, each gets its own output.
        from concurrent.futures import ThreadPoolExecutor
        want = {SNAP: cli("doctor", SNAP), FRAG: cli("doctor", FRAG)}
        with ThreadPoolExecutor(4) as pool:
            got = list(pool.map(lambda p: (p, dict(oomdoc.doctor(p))), [SNAP, FRAG] * 4))
        for p, doc in got:
            self.assertEqual(doc, want[p], p)

    def test_integrations_come_with_import(self):
        self.assertTrue(hasattr(oomdoc.integrations, "HFTrainerCallback"))
        self.assertTrue(hasattr(oomdoc.integrations, "LightningCallback"))
        self.assertNotIn("transformers", sys.modules)
        self.assertNotIn("lightning", sys.modules)


if __name__ == "__main__":
    unittest.main()
