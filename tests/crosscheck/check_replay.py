#!/usr/bin/env python3
"""check_replay.py OOMDOC - `oomdoc replay --verify --json` against figures python3 reads
straight from the fixtures: the recorded segment events (counted here from the pickle's
trace), the index of the real `oom` entry, the final segments' totals, and the real peak
(max of step_log[].peak, else memory_stats' allocated_bytes.all.peak)."""
import gzip
import json
import os
import pickle
import subprocess
import sys

OOMDOC = sys.argv[1]
D = "tests/data/snapshots"
DEVICE_TOTAL = 150109880320  # tests/data/README.md: torch's total for this device
COMPLETE = ["frag_default", "frag_default_70", "frag_expandable", "leak_eval_no_grad",
            "noleak_eval", "snap_train_default", "snap_train_expandable",
            "snap_train_maxsplit", "snap_train_oom", "snap_train_big"]
SEG = {"segment_alloc", "segment_free", "segment_map", "segment_unmap"}


def load(name):
    p = os.path.join(D, name + ".pickle")
    if os.path.exists(p):
        with open(p, "rb") as f:
            return pickle.load(f)
    with gzip.open(p + ".gz", "rb") as f:
        return pickle.load(f)


def main():
    bad = 0
    for name in COMPLETE:
        snap = load(name)
        with open(os.path.join(D, name + ".json")) as f:
            meta = json.load(f)
        trace = snap["device_traces"][0]
        recorded = sum(1 for e in trace if e["action"] in SEG)
        oom_at = next((i for i, e in enumerate(trace) if e["action"] == "oom"), None)
        final_alloc = sum(s["allocated_size"] for s in snap["segments"])
        final_resv = sum(s["total_size"] for s in snap["segments"])
        peak = max((s.get("peak", 0) for s in meta.get("step_log", [])), default=0)
        if not peak:
            peak = meta.get("memory_stats", {}).get("allocated_bytes.all.peak", 0)
        args = meta.get("args", {})
        cmd = [OOMDOC, "replay", os.path.join(D, name + ".pickle"), "--verify", "--json"]
        if not os.path.exists(cmd[2]):
            cmd[2] += ".gz"
        if "cap_bytes" in args:
            cmd += ["--capacity", str(args["cap_bytes"])]
        if "fraction" in args:
            cmd += ["--fraction", str(args["fraction"]), "--device-total", str(DEVICE_TOTAL)]
        if meta.get("alloc_conf"):
            cmd += ["--set", meta["alloc_conf"]]
        out = subprocess.run(cmd, capture_output=True, text=True)
        problems = []
        if out.returncode != 0:
            problems.append("exit %d: %s" % (out.returncode, out.stderr.strip()))
        else:
            r = json.loads(out.stdout)
            se = r["segment_events"]
            want = {"recorded": recorded, "simulated": recorded, "matched": recorded}
            for k, v in want.items():
                if se[k] != v:
                    problems.append("segment_events.%s %d != %d" % (k, se[k], v))
            if se["external_releases"] != 0 or se["first_mismatch"] is not None or not se["verified"]:
                problems.append("not verified: %s" % se)
            if r["approximate"]:
                problems.append("flagged approximate")
            if r["final_allocated_bytes"] != final_alloc or r["final_reserved_bytes"] != final_resv:
                problems.append("final %d/%d != %d/%d" % (r["final_allocated_bytes"], r["final_reserved_bytes"],
                                                          final_alloc, final_resv))
            if peak and r["peak_allocated_bytes"] != peak:
                problems.append("peak %d != %d" % (r["peak_allocated_bytes"], peak))
            got_oom = r["oom"]["event_index"] if r["oom"] else None
            if got_oom != oom_at:
                problems.append("oom at %s, real oom entry at %s" % (got_oom, oom_at))
        if problems:
            bad += 1
            print("check_replay: %s: %s" % (name, "; ".join(problems)))
    print("check_replay: %d fixtures, %d failed" % (len(COMPLETE), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
