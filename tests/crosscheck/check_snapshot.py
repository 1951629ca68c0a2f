#!/usr/bin/env python3
"""Cross-check `oomdoc snapshot --json` against an independent reading of the same files.

Python's own pickle module (restricted: no globals) reads every snapshot in tests/data and
examples/, the figures are computed here straight from the issue's definitions, and each
must equal what oomdoc reports. Usage: check_snapshot.py OOMDOC_BINARY
"""
import gzip
import io
import json
import os
import pickle
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SNAPSHOT_DIR = os.path.join(ROOT, "tests", "data", "snapshots")


class PlainUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError("global %s.%s refused" % (module, name))


def load(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return PlainUnpickler(io.BytesIO(data)).load()


def frame_kind(filename):
    if not filename or filename.startswith("<"):
        return "special"
    if "/site-packages/" in filename or "/dist-packages/" in filename:
        return "torch" if ("-packages/torch/" in filename) else "package"
    if "/lib/python" in filename or "/lib64/python" in filename:
        return "stdlib"
    return "user"


def fmt(fr):
    return "%s:%d:%s" % (fr["filename"], fr["line"], fr["name"])


def site_of(frames):
    """(site, where) of a frames list, innermost first."""
    if not frames:
        return None
    where = next((f for f in frames if frame_kind(f["filename"]) in ("user", "package")), frames[0])
    site = next((f for f in frames if frame_kind(f["filename"]) == "user"), where)
    return fmt(site), fmt(where)


def round512(n):
    return 512 if n < 512 else (n + 511) // 512 * 512


def group(items):
    """items: (site, where, bytes, requested) -> {site: [bytes, requested, count, best_where]}"""
    out = {}
    for site, where, b, r in items:
        g = out.setdefault(site, {"bytes": 0, "requested_bytes": 0, "count": 0, "_w": {}})
        g["bytes"] += b
        g["requested_bytes"] += r
        g["count"] += 1
        g["_w"][where] = g["_w"].get(where, 0) + b
    return out


def stranded(seg):
    blocks = sorted(seg["blocks"], key=lambda b: b["address"])
    if not seg.get("is_expandable"):
        if any(b["state"] != "inactive" for b in blocks):
            return sum(b["size"] for b in blocks if b["state"] == "inactive")
        return 0
    page = (20 << 20) if seg.get("segment_type", "large") != "small" else (2 << 20)
    busy = set()
    for b in blocks:
        if b["state"] != "inactive" and b["size"]:
            off = b["address"] - seg["address"]
            for p in range(off // page, (off + b["size"] - 1) // page + 1):
                busy.add(p)
    total = 0
    for b in blocks:
        if b["state"] != "inactive" or not b["size"]:
            continue
        off = b["address"] - seg["address"]
        for p in range(off // page, (off + b["size"] - 1) // page + 1):
            if p in busy:
                lo, hi = max(off, p * page), min(off + b["size"], (p + 1) * page)
                total += hi - lo
    return total


def pool_kind(pool_id):
    """As PyTorch numbers pools: (0, 0) is the default pool; a capture given no pool makes
    (N, 0) for itself (CUDAGraph::capture_begin); MemPool() and graph_pool_handle() are
    user-created, (0, N) (create_mempool_id in aten/src/ATen/core/MemPool.cpp)."""
    first, second = pool_id
    if first == 0 and second == 0:
        return "default"
    return "graph" if second == 0 else "user"


def pools_and_streams(segs):
    """pools and streams of one device's segments, as `snapshot --json` lists them."""
    pools, streams = {}, {}
    for s in segs:
        pid = tuple(s.get("segment_pool_id", (0, 0)))
        size = {st: sum(b["size"] for b in s["blocks"] if b["state"] == st)
                for st in ("active_allocated", "inactive")}
        p = pools.setdefault(pid, {"pool_id": list(pid), "kind": pool_kind(pid), "segments": 0,
                                   "reserved_bytes": 0, "allocated_bytes": 0})
        p["segments"] += 1
        p["reserved_bytes"] += s["total_size"]
        p["allocated_bytes"] += size["active_allocated"]
        t = streams.setdefault(s["stream"], {"stream": s["stream"], "reserved_bytes": 0,
                                             "allocated_bytes": 0, "free_bytes": 0})
        t["reserved_bytes"] += s["total_size"]
        t["allocated_bytes"] += size["active_allocated"]
        t["free_bytes"] += size["inactive"]
    return [pools[k] for k in sorted(pools)], [streams[k] for k in sorted(streams)]


def expected(snap, peak_at=None):
    """peak_at: device -> the trace index oomdoc names as the peak of block bytes; the
    live set there is recomputed here (requests exactly; block bytes at least the 512-B
    rounding, as the allocator replay can only make them larger)."""
    peak_at = peak_at or {}
    if isinstance(snap, list):  # torch 1.13: blocks end to end, the last history entry is current
        segments, traces = snap, None
        for seg in segments:
            addr = seg["address"]
            for b in seg["blocks"]:
                h = b["history"][-1] if b.get("history") else {}
                b.setdefault("address", addr)
                b.setdefault("requested_size", h.get("real_size", b["size"]))
                b.setdefault("frames", h.get("frames", []))
                addr += b["size"]
    else:
        segments, traces = snap["segments"], snap.get("device_traces")
    devices = sorted({s["device"] for s in segments} |
                     {d for d, t in enumerate(traces or []) if t})
    result = []
    for dev in devices:
        segs = [s for s in segments if s["device"] == dev]
        blocks = [b for s in segs for b in s["blocks"]]
        d = {
            "device": dev,
            "segments": len(segs),
            "reserved_bytes": sum(s["total_size"] for s in segs),
            "allocated_bytes": sum(b["size"] for b in blocks if b["state"] == "active_allocated"),
            "requested_bytes": sum(b["requested_size"] for b in blocks if b["state"] == "active_allocated"),
            "active_bytes": sum(b["size"] for b in blocks
                                if b["state"] in ("active_allocated", "active_pending_free")),
            "largest_free_block_bytes": max([b["size"] for b in blocks if b["state"] == "inactive"] or [0]),
            "stranded_bytes": sum(stranded(s) for s in segs),
        }
        d["pools"], d["streams"] = pools_and_streams(segs)
        trace = traces[dev] if traces is not None and dev < len(traces) else ([] if traces is not None else None)
        live_end = [b for b in blocks if b["state"] in ("active_allocated", "active_pending_free")]
        if trace is None:
            d["trace"] = None
        else:
            alloc_addrs = {e["addr"] for e in trace if e["action"] == "alloc"}
            start = sum(b["requested_size"] for b in live_end if b["address"] not in alloc_addrs)
            seen = set()
            for e in trace:
                if e["action"] == "alloc":
                    seen.add(e["addr"])
                elif e["action"] == "free_completed" and e["addr"] not in seen:
                    start += e["size"]
            cur = peak = start
            peak_i = None
            for i, e in enumerate(trace):
                if e["action"] == "alloc":
                    cur += e["size"]
                    if cur > peak:
                        peak, peak_i = cur, i
                elif e["action"] == "free_completed":
                    cur -= e["size"]
            ooms = []
            for e in trace:
                if e["action"] == "oom":
                    sw = site_of(e.get("frames")) or ("<no python frames>",) * 2
                    ooms.append({"size_bytes": e["size"], "device_free_bytes": e["device_free"],
                                 "time_us": e["time_us"], "site": sw[0]})
            d["trace"] = {
                "entries": len(trace),
                "start_live_requested_bytes": start,
                "complete": start == 0,
                "peak_requested_bytes": peak,
                "peak_time_us": trace[peak_i]["time_us"] if peak_i is not None else None,
                "oom_events": ooms,
            }
            # live at the peak
            live = {}
            for b in live_end:
                if b["address"] not in alloc_addrs:
                    sw = site_of(b.get("frames")) or ("<before trace>",) * 2
                    live[b["address"]] = (sw[0], sw[1], b["size"], b["requested_size"])
            pa = peak_at.get(dev)
            stop = pa + 1 if pa is not None else 0
            seen = set()
            for i, e in enumerate(trace):
                if e["action"] == "alloc":
                    seen.add(e["addr"])
                elif e["action"] == "free_completed" and e["addr"] not in seen and i >= stop:
                    live[e["addr"]] = ("<before trace>", "<before trace>", round512(e["size"]), e["size"])
            for e in trace[:stop]:
                if e["action"] == "alloc":
                    sw = site_of(e.get("frames")) or ("<no python frames>",) * 2
                    live[e["addr"]] = (sw[0], sw[1], round512(e["size"]), e["size"])
                elif e["action"] == "free_completed":
                    live.pop(e["addr"], None)
            d["peak_sites"] = group(live.values())
        # live at the end by site
        last_alloc = {}
        for e in (trace or []):
            if e["action"] == "alloc":
                last_alloc[e["addr"]] = e
        items = []
        for b in blocks:
            if b["state"] != "active_allocated":
                continue
            sw = site_of(b.get("frames"))
            if sw is None and b["address"] in last_alloc:
                sw = site_of(last_alloc[b["address"]].get("frames")) or ("<no python frames>",) * 2
            if sw is None:
                sw = ("<before trace>",) * 2 if trace is not None else ("<no python frames>",) * 2
            items.append((sw[0], sw[1], b["size"], b["requested_size"]))
        d["top_sites"] = group(items)
        result.append(d)
    return result


def compare(name, want, got):
    errors = []
    for w, g in zip(want, got["devices"]):
        for k in ("device", "segments", "reserved_bytes", "allocated_bytes", "requested_bytes",
                  "active_bytes", "largest_free_block_bytes", "stranded_bytes"):
            if w[k] != g[k]:
                errors.append("%s device %s: %s = %s, expected %s" % (name, w["device"], k, g[k], w[k]))
        for k in ("pools", "streams"):
            if w[k] != g[k]:
                errors.append("%s device %s: %s = %s, expected %s" % (name, w["device"], k, g[k], w[k]))
        if w["trace"] is None:
            if g["trace"] is not None:
                errors.append("%s: trace should be null" % name)
        else:
            gt = g["trace"]
            for k, v in w["trace"].items():
                if k == "oom_events":
                    gv = [{kk: o[kk] for kk in ("size_bytes", "device_free_bytes", "time_us", "site")}
                          for o in gt[k]]
                    if gv != v:
                        errors.append("%s: oom_events %s, expected %s" % (name, gv, v))
                elif gt[k] != v:
                    errors.append("%s: trace.%s = %s, expected %s" % (name, k, gt[k], v))
        for key in ("top_sites", "peak_sites"):
            if key not in w:
                continue
            want_sites = w[key]
            got_sites = {s["site"]: s for s in g[key]}
            if set(want_sites) != set(got_sites):
                errors.append("%s: %s sites differ: %s" % (name, key, set(want_sites) ^ set(got_sites)))
                continue
            for site, ws in want_sites.items():
                gs = got_sites[site]
                for k in ("bytes", "requested_bytes", "count"):
                    if ws[k] != gs[k] and not (key == "peak_sites" and k == "bytes" and gs[k] >= ws[k]):
                        errors.append("%s: %s[%s].%s = %s, expected %s" % (name, key, site, k, gs[k], ws[k]))
                best = max(ws["_w"].values())
                if ws["_w"].get(gs["where"]) != best and not site.startswith("<"):
                    errors.append("%s: %s[%s].where %s is not its largest contributor" % (name, key, site, gs["where"]))
            # sorted by bytes, and the buckets sum to the totals
            b = [s["bytes"] for s in g[key]]
            if b != sorted(b, reverse=True):
                errors.append("%s: %s not sorted by bytes" % (name, key))
        if sum(s["bytes"] for s in g["top_sites"]) != g["allocated_bytes"]:
            errors.append("%s: top_sites do not sum to allocated_bytes" % name)
        if g["trace"] and sum(s["bytes"] for s in g["peak_sites"]) != g["trace"]["peak_allocated_bytes"]:
            errors.append("%s: peak_sites do not sum to peak_allocated_bytes" % name)
    if len(want) != len(got["devices"]):
        errors.append("%s: %d devices, expected %d" % (name, len(got["devices"]), len(want)))
    return errors


def main():
    oomdoc = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "oomdoc")
    files = sorted(os.path.join(SNAPSHOT_DIR, f) for f in os.listdir(SNAPSHOT_DIR)
                   if f.endswith(".pickle") or f.endswith(".pickle.gz"))
    for sub in ("extra", "synthetic"):
        extra = os.path.join(ROOT, "tests", "data", sub)
        if os.path.isdir(extra):
            files += sorted(os.path.join(extra, f) for f in os.listdir(extra) if ".pickle" in f)
    failures = 0
    for path in files:
        name = os.path.basename(path)
        if "snap_train_long" in name and os.environ.get("OOMDOC_QUICK"):
            continue
        out = subprocess.run([oomdoc, "snapshot", "--json", "--top", "1000000", path],
                             capture_output=True, text=True)
        if out.returncode != 0:
            print("FAIL %s: exit %d: %s" % (name, out.returncode, out.stderr.strip()))
            failures += 1
            continue
        got = json.loads(out.stdout)
        peak_at = {d["device"]: d["trace"]["peak_allocated_index"] for d in got["devices"] if d.get("trace")}
        want = expected(load(path), peak_at)
        errors = compare(name, want, got)
        for e in errors[:10]:
            print("FAIL", e)
        failures += bool(errors)
        if not errors:
            d = want[0]
            print("ok %s: reserved %d allocated %d stranded %d peak %s pools %d streams %d" % (
                name, d["reserved_bytes"], d["allocated_bytes"], d["stranded_bytes"],
                d["trace"]["peak_requested_bytes"] if d["trace"] else None,
                len(d["pools"]), len(d["streams"])))
    print("snapshot cross-check: %d files, %d failed" % (len(files), failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
