#!/usr/bin/env python3
"""Write torch113_layout.pickle: the real frag_default snapshot's segments re-expressed in
torch 1.13's layout (a plain list of segments; blocks without 'address' and
'requested_size', carrying 'history' = [{addr, real_size, frames}], oldest first; no
trace). No fixture from a real torch 1.13 run exists; this keeps that reader path tested.
Run from the repository root: python3 tests/data/extra/make_torch113.py"""
import pickle

with open("tests/data/snapshots/frag_default.pickle", "rb") as f:
    snap = pickle.load(f)
segments = []
for seg in snap["segments"]:
    blocks = []
    for b in sorted(seg["blocks"], key=lambda b: b["address"]):
        nb = {"size": b["size"], "state": b["state"]}
        if b["state"] != "inactive":
            # an older, freed allocation at the same address, then the current one
            nb["history"] = [
                {"addr": b["address"], "real_size": 512, "frames": []},
                {"addr": b["address"], "real_size": b["requested_size"], "frames": b["frames"]},
            ]
        blocks.append(nb)
    segments.append({k: seg[k] for k in ("device", "address", "total_size", "allocated_size",
                                          "active_size", "stream", "segment_type")} | {"blocks": blocks})
with open("tests/data/extra/torch113_layout.pickle", "wb") as f:
    pickle.dump(segments, f, protocol=2)
