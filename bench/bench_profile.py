#!/usr/bin/env python3
"""bench_profile.py OOMDOC - a large PyTorch profiler trace, read as a stream.

Builds a trace of about 300 MB by repeating the fixture's events 33 times (shifted in time
and address, so every copy is a new stretch of the run), then times `oomdoc profile` on it
and reports its peak memory, against the baseline measured in the same run: Python's
json.load of the same file (what a script reading the trace would do), time and peak
memory. The stream reader keeps ~64 bytes per memory event and ~32 per operator, so its
memory stays a small fraction of the file."""
import gzip
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
OOMDOC = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "oomdoc")
COPIES = 33

d = json.load(gzip.open(os.path.join(ROOT, "tests", "data", "profiler", "torch_profiler_trace.json.gz")))
events = d.pop("traceEvents")
span = max(e.get("ts", 0) + e.get("dur", 0) for e in events if isinstance(e.get("ts"), (int, float))) - \
    min(e["ts"] for e in events if isinstance(e.get("ts"), (int, float))) + 1000
tmp = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
head = json.dumps(d)[:-1]
tmp.write(head + ', "traceEvents": [\n')
first = True
for k in range(COPIES):
    for e in events:
        if isinstance(e.get("ts"), (int, float)):
            e = dict(e)
            e["ts"] = e["ts"] + k * span
            if e.get("name") == "[memory]":
                a = dict(e["args"])
                a["Addr"] = a.get("Addr", 0) + k * (1 << 40)
                e["args"] = a
        tmp.write(("" if first else ",\n") + json.dumps(e))
        first = False
tmp.write("\n]}\n")
tmp.close()
size = os.path.getsize(tmp.name)
del events

def measure(cmd):
    t0 = time.time()
    p = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, capture_output=True, text=True)
    wall = time.time() - t0
    rss_kib = int(p.stderr.strip().split("\n")[-1])
    return p, wall, rss_kib

try:
    p, wall, rss = measure([OOMDOC, "profile", "--json", tmp.name])
    if p.returncode != 0:
        print("bench_profile: oomdoc failed:", p.stderr)
        sys.exit(1)
    peak = json.loads(p.stdout)["profiles"][0]["peak_allocated_bytes"]
    b, bwall, brss = measure([sys.executable, "-c", "import json,sys; json.load(open(sys.argv[1]))", tmp.name])
    print("bench_profile: %.0f MB trace (%d copies of the fixture), peak %d" % (size / 1e6, COPIES, peak))
    print("  oomdoc profile:          %6.2f s, max RSS %7.1f MiB" % (wall, rss / 1024))
    print("  baseline python json.load: %4.2f s, max RSS %7.1f MiB" % (bwall, brss / 1024))
    print("  oomdoc uses %.1fx less memory, %.1fx the baseline's speed" % (brss / rss, bwall / wall))
finally:
    os.unlink(tmp.name)
