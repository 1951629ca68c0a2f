#!/usr/bin/env python3
"""check_doctor.py OOMDOC - the snapshot diagnosis against ground truth that does not come
from oomdoc:
- leak_eval_no_grad: the run's own step log (its .json: torch.cuda.memory_allocated() after
  every step) grows ~1.38 GB per step; doctor must say leak, growth within 5% of the
  step log's least-squares slope over steps 1.., and name a site in train.py;
- noleak_eval and snap_train_long: no leak;
- live memory at each iteration boundary recomputed here straight from the pickle (python's
  own unpickler; Optimizer.step START annotations; requests rounded to 512 B; blocks live
  at the end never allocated in the trace count from the start) must equal doctor's;
- snap_train_oom: the OOM message in its .json says cap_limit: the snapshot alone too;
- several snapshots: the one with the higher trace peak (recomputed here) is named."""
import gzip
import json
import os
import pickle
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
OOMDOC = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "oomdoc")
SNAP = os.path.join(ROOT, "tests", "data", "snapshots")
failures = 0


def fail(msg):
    global failures
    failures += 1
    print("FAIL check_doctor:", msg)


def doctor(*files):
    p = subprocess.run([OOMDOC, "doctor", "--json"] + [os.path.join(SNAP, f) for f in files],
                       capture_output=True, text=True)
    if p.returncode != 0:
        fail("doctor %s: exit %d: %s" % (files, p.returncode, p.stderr.strip()))
        return None
    return json.loads(p.stdout)


def load(name):
    path = os.path.join(SNAP, name)
    with (gzip.open(path) if name.endswith(".gz") else open(path, "rb")) as f:
        return pickle.load(f)


def rnd(n):
    return 512 if n < 512 else (n + 511) // 512 * 512


def boundary_live(snap):
    """Live bytes at each Optimizer.step START inside the trace of device 0."""
    tr = snap["device_traces"][0]
    seen = set()
    start = 0
    for e in tr:
        if e["action"] == "alloc":
            seen.add(e["addr"])
        elif e["action"] == "free_completed" and e["addr"] not in seen:
            start += rnd(e["size"])
    for seg in snap["segments"]:
        if seg["device"] != 0:
            continue
        addr = seg["address"]
        for b in seg["blocks"]:
            if b["state"] in ("active_allocated", "active_pending_free") and addr not in seen:
                start += b["size"]
            addr += b["size"]
    lo, hi = tr[0]["time_us"], tr[-1]["time_us"]
    times = sorted(a["time_us"] for a in snap.get("external_annotations", [])
                   if a["stage"] == "START" and "Optimizer.step" in a["name"] and lo <= a["time_us"] <= hi)
    out, cur, k = [], start, 0
    for e in tr:
        while k < len(times) and e["time_us"] >= times[k]:
            out.append(cur)
            k += 1
        if e["action"] == "alloc":
            cur += rnd(e["size"])
        elif e["action"] == "free_completed":
            cur = max(0, cur - rnd(e["size"]))
    return out


def trace_peak(snap):
    tr = snap["device_traces"][0]
    cur = peak = 0
    for e in tr:
        if e["action"] == "alloc":
            cur += e["size"]
            peak = max(peak, cur)
        elif e["action"] == "free_completed":
            cur -= e["size"]
    return peak


def close_live(it, want):
    """oomdoc counts block bytes (the replay's, which a rounded request can only
    underestimate): at least the rounded requests, and within 1% of them."""
    if not it or len(it["live_bytes"]) != len(want):
        return False
    return all(w <= g <= w * 1.01 for g, w in zip(it["live_bytes"], want))


def ols_slope(ys):
    xs = list(range(len(ys)))
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


# The leak, against the step log.
d = doctor("leak_eval_no_grad.pickle")
if d:
    with open(os.path.join(SNAP, "leak_eval_no_grad.json")) as f:
        log = json.load(f)["step_log"]
    truth = ols_slope([s["allocated"] for s in log][1:])
    got = d["growth_bytes_per_step"]
    if d["verdict"] != "leak":
        fail("leak_eval_no_grad: verdict %s, expected leak" % d["verdict"])
    elif got is None or abs(got - truth) > 0.05 * truth:
        fail("leak_eval_no_grad: growth %s per step, step log says %.0f" % (got, truth))
    else:
        print("check_doctor: leak_eval_no_grad growth %d B/step vs step log %.0f (%.2f%%)"
              % (got, truth, 100 * (got - truth) / truth))
    if not d["site"] or "train.py" not in d["site"]:
        fail("leak_eval_no_grad: site %s, expected one in train.py" % d["site"])
    snap = load("leak_eval_no_grad.pickle")
    want = boundary_live(snap)
    it = d["snapshots"][0]["iterations"]
    if not close_live(it, want):
        fail("leak_eval_no_grad: live bytes at boundaries %s, recomputed %s" % (it and it["live_bytes"], want))

for name in ("noleak_eval.pickle", "snap_train_long.pickle.gz"):
    d = doctor(name)
    if d and d["verdict"] == "leak":
        fail("%s: verdict leak, expected none" % name)
    if d and name.startswith("noleak"):
        want = boundary_live(load(name))
        it = d["snapshots"][0]["iterations"]
        if not close_live(it, want):
            fail("%s: live bytes at boundaries %s, recomputed %s" % (name, it and it["live_bytes"], want))

d = doctor("snap_train_oom.pickle")
if d:
    with open(os.path.join(SNAP, "snap_train_oom.json")) as f:
        msg = json.load(f)["oom_message"]
    # The message: the device had far more free than requested, and "allowed" names the cap.
    if "allowed" not in msg or d["verdict"] != "cap_limit":
        fail("snap_train_oom: verdict %s, the message says cap_limit" % d["verdict"])

d = doctor("snap_train_default.pickle", "snap_train_big.pickle.gz")
if d:
    a, b = trace_peak(load("snap_train_default.pickle")), trace_peak(load("snap_train_big.pickle.gz"))
    want = "snap_train_big.pickle.gz" if b > a else "snap_train_default.pickle"
    if not d["highest_snapshot"] or not d["highest_snapshot"].endswith(want):
        fail("ranks: highest %s, expected %s" % (d["highest_snapshot"], want))

print("check_doctor: %s" % ("ok" if not failures else "%d failures" % failures))
sys.exit(1 if failures else 0)
