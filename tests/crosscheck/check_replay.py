#!/usr/bin/env python3
"""check_replay.py OOMDOC - `oomdoc replay --verify --json` against figures python3 reads
straight from the fixtures: the recorded segment events (counted here from the pickle's
trace), the releases no failed request explains (empty_cache(), e.g. the one a CUDA graph
capture begins with), the index of the real `oom` entry, the final segments' totals, the
real peak (max of step_log[].peak, else memory_stats' allocated_bytes.all.peak, else the
run's own "peak"), and for snap_cudagraph the private pool its final segments show.
Then the honesty flags: a replay that does not reproduce its run, and any what-if on it,
say "approximate"; a what-if on a wrapped trace says "answerable": false and shows no
figures."""
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
            "snap_train_maxsplit", "snap_train_oom", "snap_train_big", "snap_cudagraph"]
WRAPPED = ["snap_train_long", "snap_infer_llama"]
SEG = {"segment_alloc", "segment_free", "segment_map", "segment_unmap"}


def load(name):
    p = os.path.join(D, name + ".pickle")
    if os.path.exists(p):
        with open(p, "rb") as f:
            return pickle.load(f)
    with gzip.open(p + ".gz", "rb") as f:
        return pickle.load(f)


def external_releases(trace, capped):
    """Recorded releases not followed by an oom entry (uncapped runs release for nothing
    else); 0 for capped fixtures, whose releases all belong to the request after them."""
    if capped:
        return 0
    n, i = 0, 0
    while i < len(trace):
        if trace[i]["action"] not in ("segment_free", "segment_unmap"):
            i += 1
            continue
        j = i
        while j < len(trace) and trace[j]["action"] in ("segment_free", "segment_unmap"):
            j += 1
        k = j
        while k < len(trace) and trace[k]["action"] in SEG:
            k += 1
        if k >= len(trace) or trace[k]["action"] != "oom":
            n += j - i
        i = j
    return n


def run(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True)
    return out.returncode, (json.loads(out.stdout) if out.stdout.startswith("{") else None), out.stderr


def check_honesty(bad):
    """frag_default without its cap is not reproduced: approximate, and so is a what-if
    on it; with the cap a what-if is exact. Wrapped traces: what-ifs unanswerable."""
    frag = os.path.join(D, "frag_default.pickle")
    cases = [
        ([frag, "--json"], {"approximate": True, "answerable": True}),
        ([frag, "--json", "--set", "expandable_segments:True"], {"approximate": True, "answerable": True}),
        ([frag, "--json", "--capacity", "2GiB", "--set", "expandable_segments:True"],
         {"approximate": False, "answerable": True}),
    ]
    for name in WRAPPED:
        p = os.path.join(D, name + ".pickle.gz")
        cases.append(([p, "--json"], {"approximate": True, "answerable": True}))
        cases.append(([p, "--json", "--set", "max_split_size_mb:128"],
                      {"approximate": True, "answerable": False, "peak_reserved_bytes": None}))
    for args, want in cases:
        rc, r, err = run([OOMDOC, "replay"] + args)
        problems = []
        if rc != 0 or r is None:
            problems.append("exit %d: %s" % (rc, err.strip()))
        else:
            for k, v in want.items():
                if r.get(k) != v:
                    problems.append("%s %r != %r" % (k, r.get(k), v))
        if problems:
            bad += 1
            print("check_replay: %s: %s" % (" ".join(args), "; ".join(problems)))
    return bad, len(cases)


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
        if not peak:
            peak = meta.get("peak", 0)
        args = meta.get("args", {})
        external = external_releases(trace, "cap_bytes" in args or "fraction" in args)
        pools = {tuple(s["segment_pool_id"]) for s in snap["segments"]
                 if tuple(s.get("segment_pool_id", (0, 0))) != (0, 0)}
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
            if se["external_releases"] != external or se["first_mismatch"] is not None or not se["verified"]:
                problems.append("not verified (%d external releases expected): %s" % (external, se))
            got_pools = r.get("private_pools", {}).get("pools", 0)
            if got_pools != len(pools):
                problems.append("private pools %d != %d" % (got_pools, len(pools)))
            for k in ("allocated_end", "reserved_end"):
                if k in meta and r["final_" + k.split("_")[0] + "_bytes"] != meta[k]:
                    problems.append("%s %d != %d" % (k, r["final_" + k.split("_")[0] + "_bytes"], meta[k]))
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
    bad, n_honesty = check_honesty(bad)
    print("check_replay: %d fixtures, %d honesty cases, %d failed" % (len(COMPLETE), n_honesty, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
