#!/usr/bin/env python3
"""check_profile.py OOMDOC - oomdoc profile against the profiler fixtures, each figure
recomputed here with the standard library only:
- the Chrome trace's peak of Total Allocated equals the run's real max_memory_allocated()
  (torch_prof_run.json) exactly, and equals the maximum of the [memory] events;
- export_memory_timeline: the peak row, its per-category composition (torch's column order:
  padding, parameter, optimizer_state, input, temporary, activation, gradient,
  autograd_detail, unknown) summing to the total, within 512 bytes of the real peak;
- self memory per operator from the trace matches torch's own key_averages() table
  (torch_key_averages.txt), name for name, within the table's printed rounding; and the
  table read directly gives the same figures;
- the JAX pprof's live bytes (decoded here with a small protobuf walker) and the
  memory_stats figures are reported as the files hold them."""
import gzip
import json
import os
import re
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
OOMDOC = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "oomdoc")
D = os.path.join(ROOT, "tests", "data", "profiler")
failures = 0


def fail(msg):
    global failures
    failures += 1
    print("FAIL check_profile:", msg)


def profile(*files, top=50):
    p = subprocess.run([OOMDOC, "profile", "--json", "--top", str(top)] + [os.path.join(D, f) for f in files],
                       capture_output=True, text=True)
    if p.returncode != 0:
        fail("%s: exit %d: %s" % (files, p.returncode, p.stderr.strip()))
        return None
    return json.loads(p.stdout)


real_peak = json.load(open(os.path.join(D, "torch_prof_run.json")))["peak_allocated"]

# --- Chrome trace
trace = json.load(gzip.open(os.path.join(D, "torch_profiler_trace.json.gz")))
events = trace["traceEvents"]
mem = [e for e in events if e.get("name") == "[memory]" and e["args"].get("Device Id", -1) >= 0
       and e["args"].get("Device Type", 1) != 0]
py_peak = max(e["args"]["Total Allocated"] for e in mem)
if py_peak != real_peak:
    fail("fixture: trace peak %d != real %d" % (py_peak, real_peak))
doc = profile("torch_profiler_trace.json.gz")
if doc:
    t = doc["profiles"][0]
    if t["kind"] != "torch-trace":
        fail("trace kind %s" % t["kind"])
    if t["peak_allocated_bytes"] != real_peak:
        fail("trace peak %d != real max_memory_allocated %d" % (t["peak_allocated_bytes"], real_peak))
    if t["memory_events"] != len(mem):
        fail("memory events %d != %d" % (t["memory_events"], len(mem)))
    if t["peak_reserved_bytes"] != max(e["args"]["Total Reserved"] for e in mem):
        fail("peak reserved")
    if t["optimizer_steps"] != sum(1 for e in events if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "user_annotation")
                                  and e.get("name", "").startswith("Optimizer.step#")):
        fail("optimizer steps %d" % t["optimizer_steps"])
    # The peak falls inside an autograd evaluate_function span on some thread: backward.
    peak_ev = min((e for e in mem if e["args"]["Total Allocated"] == py_peak), key=lambda e: e["ts"])
    in_bwd = any(e.get("ph") == "X" and e.get("name", "").startswith("autograd::engine::evaluate_function: ")
                 and e["ts"] <= peak_ev["ts"] <= e["ts"] + e["dur"] for e in events)
    want_phase = "backward" if in_bwd else t["peak_phase"]
    if t["peak_phase"] != want_phase:
        fail("peak phase %s, expected %s" % (t["peak_phase"], want_phase))
    if t["peak_tracked_bytes"] + t["peak_untracked_bytes"] != real_peak:
        fail("tracked + untracked != peak")
    # per step: the peak since the previous optimizer step, allocated right after it
    opt = sorted((e for e in events if e.get("cat") in ("cpu_op", "user_annotation")
                  and e.get("name", "").startswith("Optimizer.step#")), key=lambda e: e["ts"])
    ms = sorted(mem, key=lambda e: e["ts"])
    prev = None
    want = []
    for o in opt:
        end = o["ts"] + o["dur"]
        w = [e for e in ms if (prev is None or e["ts"] > prev) and e["ts"] <= end]
        want.append((max(e["args"]["Total Allocated"] for e in w), w[-1]["args"]["Total Allocated"]))
        prev = end
    got_steps = [(s["peak_allocated_bytes"], s["allocated_bytes"]) for s in t["steps"]]
    if got_steps != want:
        fail("steps %s != %s" % (got_steps, want))
    # key_averages() as torch printed it: Self CUDA Mem per operator.
    lines = open(os.path.join(D, "torch_key_averages.txt")).read().split("\n")
    rules = [i for i, l in enumerate(lines) if l.startswith("-----")]
    header = re.split(r"\s{2,}", lines[rules[0] + 1].strip())
    col = header.index("Self CUDA Mem")
    units = {"B": 1, "b": 1, "KB": 1024, "Kb": 1024, "MB": 1024 ** 2, "Mb": 1024 ** 2, "GB": 1024 ** 3, "Gb": 1024 ** 3}
    table = {}
    for l in lines[rules[1] + 1:rules[2]]:
        cells = re.split(r"\s{2,}", l.strip())
        num, unit = cells[col].split()
        table[cells[0]] = (float(num), units[unit])
    got = {r["name"]: r["bytes"] for r in t["ops_self"]}
    top = [r["name"] for r in t["ops_self"][:len(table)]]
    if set(top) != set(table):
        fail("top operators differ from key_averages: %s vs %s" % (sorted(top), sorted(table)))
    for name, (num, unit) in table.items():
        b = got.get(name)
        if b is None or abs(b / unit - num) > 0.005 + 1e-9:
            fail("operator %s: %s bytes, key_averages prints %.2f x %d" % (name, b, num, unit))
    doc = profile("torch_key_averages.txt")
    if doc:
        rows = {r["name"]: r["bytes"] for r in doc["profiles"][0]["ops_self"]}
        for name, (num, unit) in table.items():
            if name not in rows or abs(rows[name] - num * unit) > 0.5:
                fail("table row %s: %s vs %.2f x %d" % (name, rows.get(name), num, unit))

# --- memory timeline
times, sizes = json.load(open(os.path.join(D, "torch_memory_timeline.json")))
cats = ["parameter", "optimizer_state", "input", "temporary", "activation", "gradient", "autograd_detail", "unknown"]
sums = [sum(max(v, 0) for v in r[1:]) for r in sizes]
pk = max(sums)
row = sizes[sums.index(pk)]
doc = profile("torch_memory_timeline.json")
if doc:
    m = doc["profiles"][0]
    if m["peak_allocated_bytes"] != pk:
        fail("timeline peak %d != %d" % (m["peak_allocated_bytes"], pk))
    comp = m["peak_composition"]
    if list(comp) != cats:
        fail("categories %s" % list(comp))
    if sum(comp.values()) != m["peak_allocated_bytes"]:
        fail("composition sums to %d, total %d" % (sum(comp.values()), m["peak_allocated_bytes"]))
    for i, c in enumerate(cats):
        if comp[c] != max(row[i + 1], 0):
            fail("category %s: %d != %d" % (c, comp[c], row[i + 1]))
    if abs(m["peak_allocated_bytes"] - real_peak) > 512:
        fail("timeline peak %d more than 512 bytes from the real peak %d" % (m["peak_allocated_bytes"], real_peak))


# --- JAX pprof and memory_stats
def varint(b, i):
    r = s = 0
    while True:
        c = b[i]
        i += 1
        r |= (c & 0x7F) << s
        s += 7
        if c < 0x80:
            return r, i


def fields(b):
    i, out = 0, []
    while i < len(b):
        k, i = varint(b, i)
        f, w = k >> 3, k & 7
        if w == 0:
            v, i = varint(b, i)
        elif w == 2:
            n, i = varint(b, i)
            v, i = b[i:i + n], i + n
        elif w == 1:
            v, i = b[i:i + 8], i + 8
        else:
            v, i = b[i:i + 4], i + 4
        out.append((f, w, v))
    return out


def packed(v):
    i, r = 0, []
    while i < len(v):
        x, i = varint(v, i)
        r.append(x)
    return r


raw = gzip.decompress(open(os.path.join(D, "jax_device_memory.prof"), "rb").read())
top = fields(raw)
strings = [v.decode() for f, w, v in top if f == 6]
stypes = [dict((a, c) for a, _, c in fields(v)) for f, w, v in top if f == 1]
space = [i for i, st in enumerate(stypes) if strings[st.get(2, 0)] == "bytes"][0]
live = 0
for f, w, v in top:
    if f == 2:
        for a, ww, c in fields(v):
            if a == 2:
                live += packed(c)[space] if ww == 2 else 0
stats = json.load(open(os.path.join(D, "jax_memory_stats.json")))["memory_stats"]
doc = profile("jax_device_memory.prof", "jax_memory_stats.json")
if doc:
    jp, js = doc["profiles"]
    if jp["live_bytes"] != live:
        fail("pprof live bytes %d != %d" % (jp["live_bytes"], live))
    if sum(r["bytes"] for r in jp["by_kind"]) != live:
        fail("by_kind does not add up to live bytes")
    for k in ("bytes_in_use", "peak_bytes_in_use", "largest_free_block_bytes", "bytes_limit"):
        if js["memory_stats"].get(k) != stats[k]:
            fail("memory_stats %s: %s != %s" % (k, js["memory_stats"].get(k), stats[k]))
    c = doc.get("jax_consistency")
    if not c or c["profile_live_bytes"] != live or c["bytes_in_use"] != stats["bytes_in_use"] \
            or c["difference_bytes"] != stats["bytes_in_use"] - live:
        fail("jax_consistency %s" % c)

if failures:
    sys.exit(1)
print("check_profile: ok (trace peak %d = real, timeline peak %d, %d operators match key_averages, JAX live %d)"
      % (real_peak, pk, len(table), live))
