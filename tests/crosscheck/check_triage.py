#!/usr/bin/env python3
"""check_triage.py OOMDOC - triage verdicts and figures against the fixtures' own ground
truth: the verdict column of tests/data/messages/README.md, the real OOM messages in
tests/data/snapshots/*.json, and figures re-read here with independent regular
expressions (a figure printed as "9.71 GiB" is 9.71 * 2^30 bytes, to the byte)."""
import json
import os
import re
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
OOMDOC = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "oomdoc")
VERDICTS = ("fragmentation", "cap_limit", "other_processes", "capacity", "host_memory", "unknown")
UNIT = {"B": 1, "bytes": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40,
        "KB": 2**10, "MB": 2**20, "GB": 2**30, "K": 2**10, "M": 2**20, "G": 2**30, "EB": 2**60}
failures = 0


def fail(msg):
    global failures
    failures += 1
    print("FAIL check_triage:", msg)


def triage(path=None, text=None, rc=0):
    args = [OOMDOC, "triage", "--json", path or "-"]
    p = subprocess.run(args, input=text, capture_output=True, text=True, cwd=ROOT)
    if p.returncode != rc:
        fail("%s: exit %d: %s" % (path or "<stdin>", p.returncode, p.stderr.strip()))
        return None
    return json.loads(p.stdout)


def size(num, unit):
    # exact decimal arithmetic: hundredths of the unit, rounded to the nearest byte
    whole, _, frac = num.partition(".")
    scale = 10 ** len(frac)
    return (int(whole + frac) * UNIT[unit] + scale // 2) // scale


# Figures re-read from the message text with their own patterns; each must be within 0.5%.
FIGURES = [
    ("requested_bytes", r"Tried to allocate (?:more than )?([\d.]+) ?(\w+)"),
    ("requested_bytes", r"you tried to allocate (\d+) (bytes)"),
    ("requested_bytes", r"CUDA calloc (\d+) (bytes)"),
    ("requested_bytes", r"requested buffer of size (\d+)()"),
    ("requested_bytes", r"trying to allocate (\d+) (bytes)"),
    ("requested_bytes", r"\((\d+) (bytes)\) from device"),
    ("requested_bytes", r"Used ([\d.]+)([KMG]) of"),
    ("capacity_bytes", r"Used [\d.]+[KMG] of ([\d.]+)([KMG])"),
    ("requested_bytes", r"reserve ([\d.]+)([KMG]) at the bottom"),
    ("free_bytes", r"There are ([\d.]+)([KMG]) free"),
    ("capacity_bytes", r"\(GPU \d+; ([\d.]+) (\w+) total capacity"),
    ("allocated_bytes", r"([\d.]+) (\w+) already allocated"),
    ("free_bytes", r"([\d.]+) (\w+) free;"),
    ("reserved_unallocated_bytes", r"([\d.]+) (\w+) cached\)"),
    ("capacity_bytes", r"\([\d.]+/([\d.]+) (GiB)\) on startup"),
    ("free_bytes", r"\(([\d.]+)/[\d.]+ (GiB)\) on startup"),
    ("requested_bytes", r"utilization \([\d.]+, ([\d.]+) (GiB)\)"),
    ("requested_bytes", r"\(([\d.]+) (GiB) KV cache is needed"),
    ("free_bytes", r"available KV cache memory \(([\d.]+) (GiB)\)"),
    ("requested_bytes", r"\((\d+)(B)\) on device ordinal"),
    ("allowed_bytes", r"([\d.]+) (\w+) allowed;"),
    ("allowed_bytes", r"max allowed: ([\d.]+) (\w+)\)"),
    ("allocated_bytes", r"MPS allocated: ([\d.]+) (\w+),"),
    ("allocated_bytes", r"Currently allocated\s*: ([\d.]+) (\w+)"),
    ("requested_bytes", r"Requested\s*: ([\d.]+) (\w+)"),
    ("capacity_bytes", r"Device limit\s*: ([\d.]+) (\w+)"),
    ("free_bytes", r"Free \(according to CUDA\): ([\d.]+) (\w+)"),
]


def check_figures(name, r):
    text = open(os.path.join(ROOT, "tests/data/messages", name)).read()
    for key, pat in FIGURES:
        m = re.search(pat, text)
        if not m:
            continue
        want = float(m.group(1)) * UNIT.get(m.group(2) or "B", 1)
        got = r.get(key)
        if got is None or abs(got - want) > 0.005 * want + 0.5:
            fail("%s: %s = %s, the text says %s" % (name, key, got, want))
    m = re.search(r"shape ?\[([\d,]+)\] and type float\b", text)
    if m:
        want = 4
        for d in m.group(1).split(","):
            want *= int(d)
        if r.get("requested_bytes") != want:
            fail("%s: requested_bytes = %s, shape x 4 = %s" % (name, r.get("requested_bytes"), want))
    for key, pat in (("max_model_len", r"max seq len \((\d+)\)"), ("kv_cache_tokens", r"KV cache \((\d+)\)"),
                     ("kv_cache_tokens", r"maximum model length is (\d+)")):
        m = re.search(pat, text)
        if m and r.get(key) != int(m.group(1)):
            fail("%s: %s = %s, the text says %s" % (name, key, r.get(key), m.group(1)))
    if "reserved in total by PyTorch" in text:
        m = re.search(r"([\d.]+) (\w+) reserved in total", text)
        a = re.search(r"([\d.]+) (\w+) already allocated", text)
        want = float(m.group(1)) * UNIT[m.group(2)] - float(a.group(1)) * UNIT[a.group(2)]
        got = r.get("reserved_unallocated_bytes")
        if got is None or abs(got - want) > 0.005 * max(want, 2**20):
            fail("%s: reserved_unallocated_bytes = %s, the text says %s" % (name, got, want))


def check_summary(name, doc, allowed):
    """A memory_summary() table alone: one table, no report, its verdict, and its current
    figures re-read from the rows (whole units, so exact to the byte)."""
    text = open(os.path.join(ROOT, "tests/data/messages", name)).read()
    if doc["reports"] or len(doc["memory_summaries"]) != 1:
        fail("%s: %d reports, %d tables" % (name, len(doc["reports"]), len(doc["memory_summaries"])))
        return
    m = doc["memory_summaries"][0]
    for key, label in (("allocated_bytes", "Allocated memory"), ("reserved_bytes", "GPU reserved memory"),
                       ("non_releasable_bytes", "Non-releasable memory")):
        f = re.search(r"\| %s\s*\|\s*(\d+) (\w+)" % label, text)
        want = int(f.group(1)) * UNIT[f.group(2)] if f else None
        if m.get(key) != want:
            fail("%s: %s = %s, the table says %s" % (name, key, m.get(key), want))
    f = re.search(r"CUDA OOMs: (\d+)", text)
    if f and m.get("ooms") != int(f.group(1)):
        fail("%s: ooms = %s, the table says %s" % (name, m.get("ooms"), f.group(1)))
    if m["verdict"] not in allowed:
        fail("%s: verdict %s, README says %s" % (name, m["verdict"], "/".join(sorted(allowed))))
    else:
        print("ok %-28s %s" % (name, m["verdict"]))


def check_smi(name, doc, allowed):
    """nvidia-smi's process list alone: every row (GPU, PID, MiB) re-read, and the table's verdict."""
    text = open(os.path.join(ROOT, "tests/data/messages", name)).read()
    rows = [(int(g), int(p), int(m) * 2**20)
            for g, p, m in re.findall(r"^\|\s+(\d+)\s+\S+\s+\S+\s+(\d+)\s+[CGM+]+\s+.*?(\d+)MiB \|$", text, re.M)]
    got = [(q["gpu"], q["pid"], q["bytes"]) for q in doc["nvidia_smi"]["processes"]]
    if doc["reports"] or got != rows:
        fail("%s: %d reports, processes %s, the table says %s" % (name, len(doc["reports"]), got, rows))
    v = doc["nvidia_smi"]["verdict"]
    if v not in allowed:
        fail("%s: verdict %s, README says %s" % (name, v, "/".join(sorted(allowed))))
    else:
        print("ok %-28s %s" % (name, v))


# 1. every message file gets the verdict and framework its README gives
readme = open(os.path.join(ROOT, "tests/data/messages/README.md")).read()
# (the real/ corpus has its own labels and script: check_triage_corpus.py)
rows = [r for r in re.findall(r"^\| (\S+\.txt) \|[^|]*\|([^|]*)\|", readme, re.M) if not r[0].startswith("real/")]
if len(rows) < 48:
    fail("README table: found %d rows" % len(rows))
for name, conclude in rows:
    allowed = {v for v in VERDICTS if re.search(r"\b%s\b" % v, conclude)}
    fw = re.search(r"framework (\S+)", conclude)
    if "nothing recognized" in conclude:
        # exit 1 (no report), and nothing read: no report, table, stats or smi rows
        doc = triage(os.path.join("tests/data/messages", name), rc=1)
        if doc and (doc["reports"] or doc["memory_summaries"] or doc["memory_stats"] or doc["nvidia_smi"]["gpus"]):
            fail("%s: read as something" % name)
        elif doc:
            print("ok %-28s nothing recognized" % name)
        continue
    doc = triage(os.path.join("tests/data/messages", name))
    if not doc:
        continue
    if "memory_summary" in conclude:
        check_summary(name, doc, allowed)
        continue
    if "nvidia-smi" in conclude:
        check_smi(name, doc, allowed)
        continue
    if len(doc["reports"]) != 1:
        fail("%s: %d reports" % (name, len(doc["reports"])))
        continue
    got = doc["reports"][0]["verdict"]["name"]
    if fw and doc["reports"][0]["framework"] != fw.group(1):
        fail("%s: framework %s, README says %s" % (name, doc["reports"][0]["framework"], fw.group(1)))
    check_figures(name, doc["reports"][0])
    if got not in allowed:
        fail("%s: verdict %s, README says %s" % (name, got, "/".join(sorted(allowed))))
    else:
        print("ok %-28s %s" % (name, got))
    m = re.search(r"allocate (\d+) bytes", open(os.path.join(ROOT, "tests/data/messages", name)).read())
    # exact, or the BFC allocator's rounded size of the same request (within 0.5%)
    if m and abs((doc["reports"][0]["requested_bytes"] or 0) - int(m.group(1))) > 0.005 * int(m.group(1)):
        fail("%s: requested %s" % (name, doc["reports"][0]["requested_bytes"]))
    if "128·768·64·64·4" in conclude and doc["reports"][0]["requested_bytes"] != 128 * 768 * 64 * 64 * 4:
        fail("%s: requested %s" % (name, doc["reports"][0]["requested_bytes"]))

# 2. the real messages recorded with the snapshots, and their figures
expect = {"frag_default": "fragmentation", "snap_train_oom": "cap_limit"}
PATTERNS = {
    "requested_bytes": r"Tried to allocate ([\d.]+) (\w+)",
    "capacity_bytes": r"total capacity of ([\d.]+) (\w+)",
    "free_bytes": r"of which ([\d.]+) (\w+) is free",
    "allowed_bytes": r"([\d.]+) (\w+) allowed",
    "allocated_bytes": r"([\d.]+) (\w+) is allocated by PyTorch",
    "reserved_unallocated_bytes": r"([\d.]+) (\w+) is reserved by PyTorch but unallocated",
    "process_bytes": r"this process has ([\d.]+) (\w+) memory in use",
}
snapdir = os.path.join(ROOT, "tests/data/snapshots")
for fn in sorted(os.listdir(snapdir)):
    if not fn.endswith(".json"):
        continue
    d = json.load(open(os.path.join(snapdir, fn)))
    msg = d.get("oom_message")
    if not msg:
        continue
    name = fn[:-5]
    doc = triage(text="Traceback (most recent call last):\n  ...\ntorch.OutOfMemoryError: " + msg + "\n")
    if not doc or len(doc["reports"]) != 1:
        fail("%s: expected one report" % name)
        continue
    r = doc["reports"][0]
    for key, pat in PATTERNS.items():
        m = re.search(pat, msg)
        want = size(m.group(1), m.group(2)) if m else None
        if r[key] != want:
            fail("%s: %s = %s, message says %s" % (name, key, r[key], want))
    others = [(int(p), size(n, u)) for p, n, u in re.findall(r"Process (\d+) has ([\d.]+) (\w+) memory in use", msg)]
    if [(o["pid"], o["bytes"]) for o in r["other_processes"]] != others:
        fail("%s: other processes %s" % (name, r["other_processes"]))
    # the verdict rule, recomputed here
    cap = r["allowed_bytes"]
    used = r["allocated_bytes"] + r["reserved_unallocated_bytes"]
    headroom = max(0, (cap if cap is not None else r["capacity_bytes"]) - used)
    if cap is None:
        headroom = min(headroom, r["free_bytes"])
    if r["verdict"]["headroom_bytes"] != headroom:
        fail("%s: headroom %s, expected %s" % (name, r["verdict"]["headroom_bytes"], headroom))
    if name in expect and r["verdict"]["name"] != expect[name]:
        fail("%s: verdict %s, expected %s" % (name, r["verdict"]["name"], expect[name]))
    print("ok %-28s %s" % (name, r["verdict"]["name"]))

print("check_triage: %s" % ("ok" if failures == 0 else "%d failures" % failures))
sys.exit(1 if failures else 0)
