"""e2e_hook.py OOMDOC - the files oomdoc_hook writes, read by oomdoc.

A "training loop" under the stand-in torch reproduces the real leak run's per-step memory
(tests/data/snapshots/leak_eval_no_grad.json, step_log) and then runs out of memory; the
stand-in's snapshot is the real OOM snapshot snap_train_oom.pickle. Then:
  * the step log must have exactly the columns `trend` reads (issue: step,
    allocated_bytes, reserved_bytes, peak_bytes) with the run's numbers;
  * where this build has `oomdoc trend`, it must call the step log a leak growing within
    5% of the fixture's 1.38 GB per step (its README's ground truth: step_log allocated);
  * where this build has `oomdoc snapshot`, it must read the snapshot (exit 0);
  * where this build has `oomdoc doctor`, it must read the snapshot and the step log
    (exit 0, a JSON verdict).
Subcommands absent from this build are reported as skipped on stderr."""
import io
import json
import os
import subprocess
import sys
import tempfile
from contextlib import redirect_stderr

OOMDOC = os.path.abspath(sys.argv[1])
ROOT = os.getcwd()
sys.path.insert(0, os.path.join(ROOT, "tests", "python", "standin"))
sys.path.insert(0, os.path.join(ROOT, "python"))
import torch  # noqa: E402  (the stand-in)
import oomdoc_hook  # noqa: E402
from oomdoc import capture  # noqa: E402

FIX = json.load(open(os.path.join(ROOT, "tests/data/snapshots/leak_eval_no_grad.json")))
LOG = FIX["step_log"]
ok = True


def check(cond, what):
    global ok
    if not cond:
        ok = False
        print("FAIL e2e_hook: " + what, file=sys.stderr)


def has(cmd):
    r = subprocess.run([OOMDOC, cmd, "--help"], capture_output=True, timeout=30)
    return r.returncode == 0


with tempfile.TemporaryDirectory() as tmp:
    name = os.path.join(tmp, "run")
    torch.reset()
    capture._observer_for = None
    torch.snapshot_source = os.path.join(ROOT, "tests/data/snapshots/snap_train_oom.pickle")
    torch.script_steps([(s["allocated"], s["reserved"], s["allocated"]) for s in LOG])
    try:
        with redirect_stderr(io.StringIO()):
            with oomdoc_hook.record(name):
                for _ in LOG:
                    torch.run_step()
                    oomdoc_hook.step()
                torch.simulate_oom()
    except torch.OutOfMemoryError:
        pass
    steps = name + ".steps.jsonl"
    rows = [json.loads(x) for x in open(steps).read().splitlines()]
    check([list(r) for r in rows] == [["step", "allocated_bytes", "reserved_bytes", "peak_bytes"]] * len(LOG),
          "step log columns")
    check([r["allocated_bytes"] for r in rows] == [s["allocated"] for s in LOG], "allocated_bytes values")
    check(os.path.getsize(name + ".pickle") == os.path.getsize(torch.snapshot_source), "snapshot written")
    per_step = (LOG[-1]["allocated"] - LOG[1]["allocated"]) / (len(LOG) - 2)
    check(abs(per_step - 1.38e9) < 0.02e9, "fixture's own growth is ~1.38 GB/step (%.4g)" % per_step)

    if has("trend"):
        r = subprocess.run([OOMDOC, "trend", steps, "--json"], capture_output=True, text=True, timeout=60)
        check(r.returncode == 0, "oomdoc trend exit %d: %s" % (r.returncode, r.stderr.strip()))
        if r.returncode == 0:
            doc = json.loads(r.stdout)
            check(doc.get("verdict") == "leak", "trend verdict %r" % doc.get("verdict"))
            g = doc.get("growth_bytes_per_step") or 0
            check(abs(g - 1.38e9) <= 0.05 * 1.38e9, "trend growth %.4g B/step vs 1.38e9" % g)
    else:
        print("e2e_hook: skipped: this build has no `oomdoc trend`", file=sys.stderr)
    if has("snapshot"):
        r = subprocess.run([OOMDOC, "snapshot", name + ".pickle"], capture_output=True, text=True, timeout=120)
        check(r.returncode == 0, "oomdoc snapshot exit %d: %s" % (r.returncode, r.stderr.strip()))
    else:
        print("e2e_hook: skipped: this build has no `oomdoc snapshot`", file=sys.stderr)
    if has("doctor"):
        r = subprocess.run([OOMDOC, "doctor", name + ".pickle", steps, "--json"], capture_output=True,
                           text=True, timeout=120)
        check(r.returncode == 0, "oomdoc doctor exit %d: %s" % (r.returncode, r.stderr.strip()))
        if r.returncode == 0:
            check("verdict" in json.loads(r.stdout), "doctor JSON has a verdict")
    else:
        print("e2e_hook: skipped: this build has no `oomdoc doctor`", file=sys.stderr)

sys.exit(0 if ok else 1)
