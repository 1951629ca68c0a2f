#!/usr/bin/env python3
"""check_trend.py OOMDOC - trend verdicts and growth against the fixtures' own step logs:
leak_eval_no_grad grows about 1.38 GB per step (tests/data/README.md), here recomputed by
ordinary least squares over steps 1.. (step 0 creates the optimizer state); noleak_eval
and snap_train_long are flat; the leak run's NVML series shows the leak too."""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
OOMDOC = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "oomdoc")
failures = 0


def fail(msg):
    global failures
    failures += 1
    print("FAIL check_trend:", msg)


def trend(text, suffix):
    with tempfile.NamedTemporaryFile("w", suffix=suffix, delete=False) as f:
        f.write(text)
    try:
        p = subprocess.run([OOMDOC, "trend", "--json", f.name], capture_output=True, text=True)
    finally:
        os.unlink(f.name)
    if p.returncode != 0:
        fail("exit %d: %s" % (p.returncode, p.stderr.strip()))
        return None
    return json.loads(p.stdout)


def ols_slope(xs, ys):
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0


expect = {"leak_eval_no_grad": "leak", "noleak_eval": "stable", "snap_train_long": "stable",
          "snap_train_default": "stable"}
for name, verdict in expect.items():
    log = json.load(open(os.path.join(ROOT, "tests/data/snapshots", name + ".json")))["step_log"]
    # written here in this script's own layout: JSON Lines with *_bytes names, shuffled
    rows = sorted(log, key=lambda r: (r["step"] * 7919) % 101)
    text = "".join(json.dumps({"step": r["step"], "allocated_bytes": r["allocated"],
                               "reserved_bytes": r["reserved"]}) + "\n" for r in rows)
    doc = trend(text, ".jsonl")
    if not doc:
        continue
    want = ols_slope([r["step"] for r in log[1:]], [r["allocated"] for r in log[1:]])
    got = doc["growth_bytes_per_step"]
    if doc["verdict"] != verdict:
        fail("%s: verdict %s, expected %s" % (name, doc["verdict"], verdict))
    if verdict == "leak":
        if abs(got - want) > 0.05 * want or abs(got - 1.38e9) > 0.05 * 1.38e9:
            fail("%s: growth %d B/step, least squares %d, README 1.38 GB" % (name, got, want))
    elif abs(got) > 1 << 20:
        fail("%s: growth %d B/step on a flat log" % (name, got))
    print("ok %-20s %-7s growth %d B/step (least squares: %d)" % (name, doc["verdict"], got, want))

d = json.load(open(os.path.join(ROOT, "tests/data/snapshots/leak_eval_no_grad.json")))
text = "time_s,used_bytes\n" + "".join("%.6f,%d\n" % (t, u) for t, u in d["nvml_series"])
doc = trend(text, ".csv")
if doc:
    if doc["verdict"] != "leak" or doc["index"] != "time_s" or doc["growth_bytes_per_second"] <= 0:
        fail("leak NVML series: %s, %s" % (doc["verdict"], doc.get("growth_bytes_per_second")))
    else:
        print("ok %-20s %-7s growth %d B/s" % ("leak nvml_series", doc["verdict"], doc["growth_bytes_per_second"]))

print("check_trend: %s" % ("ok" if failures == 0 else "%d failures" % failures))
sys.exit(1 if failures else 0)
