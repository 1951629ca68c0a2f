#!/usr/bin/env python3
"""check_diff.py OOMDOC - `oomdoc diff --json` against figures recomputed here from the
pickles with python's own unpickler: reserved (sum of segments' total_size), allocated
(active_allocated blocks' sizes), segment counts, and live bytes at the end by source line
(innermost frame of /home/user/project/, the fixtures' user code) for the largest changes."""
import collections
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
    print("FAIL check_diff:", msg)


def load(name):
    path = os.path.join(SNAP, name)
    with (gzip.open(path) if name.endswith(".gz") else open(path, "rb")) as f:
        return pickle.load(f)


def figures(snap):
    segs = [s for s in snap["segments"] if s["device"] == 0]
    reserved = sum(s["total_size"] for s in segs)
    allocated = sum(b["size"] for s in segs for b in s["blocks"] if b["state"] == "active_allocated")
    return len(segs), reserved, allocated


def user_site(frames):
    for f in frames:
        if f["filename"].startswith("/home/user/project/"):
            return "%s:%d:%s" % (f["filename"], f["line"], f["name"])
    return None


def live_by_site(snap):
    """Live at the end by user site; a block's own frames, else its address's last alloc."""
    last = {}
    for e in snap["device_traces"][0]:
        if e["action"] == "alloc":
            last[e["addr"]] = e.get("frames", [])
    out = collections.Counter()
    for s in snap["segments"]:
        if s["device"] != 0:
            continue
        addr = s["address"]
        for b in s["blocks"]:
            if b["state"] == "active_allocated":
                fr = b.get("frames") or last.get(addr, [])
                site = user_site(fr)
                if site:
                    out[site] += b["size"]
            addr += b["size"]
    return out


for before, after in (("snap_train_default.pickle", "snap_train_expandable.pickle"),
                      ("leak_eval_no_grad.pickle", "noleak_eval.pickle")):
    p = subprocess.run([OOMDOC, "diff", "--json", os.path.join(SNAP, before), os.path.join(SNAP, after)],
                       capture_output=True, text=True)
    if p.returncode != 0:
        fail("%s %s: exit %d %s" % (before, after, p.returncode, p.stderr))
        continue
    dev = json.loads(p.stdout)["devices"][0]
    b, a = load(before), load(after)
    (sb, rb, ab), (sa, ra, aa) = figures(b), figures(a)
    for key, want in (("segments", sa - sb), ("reserved_bytes", ra - rb), ("allocated_bytes", aa - ab)):
        if dev[key]["change"] != want:
            fail("%s -> %s: %s change %s, recomputed %d" % (before, after, key, dev[key]["change"], want))
    lb, la = live_by_site(b), live_by_site(a)
    got = {s["site"]: s["change_bytes"] for s in dev["live_by_site"]}
    for site in set(lb) | set(la):
        want = la[site] - lb[site]
        if want and got.get(site) != want:
            fail("%s -> %s: %s change %s, recomputed %d" % (before, after, site, got.get(site), want))
    changes = [abs(s["change_bytes"]) for s in dev["live_by_site"]]
    if changes != sorted(changes, reverse=True):
        fail("%s -> %s: sites not largest change first" % (before, after))

print("check_diff: %s" % ("ok" if not failures else "%d failures" % failures))
sys.exit(1 if failures else 0)
