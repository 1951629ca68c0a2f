#!/usr/bin/env python3
# run_all: release only (the check does not depend on the build variant)
"""One categorizer: the report page colours each allocation by the category the diagnosis
counts it in (its timeline data's "ac", from categorize.h), so the page's totals at the
peak (the allocations the data marks live at the peak, "ap", summed per category) equal
doctor's categories at the peak, within 1 MiB, on an inference trace, a CUDA-graph capture
and training runs (a leak's retained graphs included). Before, the page took a category
from frames alone: 383 MiB of weights of snap_infer_llama showed as gradients, the cuBLAS
workspace of snap_cudagraph as activations.

Usage: check_page_categories.py OOMDOC"""
import json
import os
import re
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
OOMDOC = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else os.path.join(ROOT, "oomdoc")
S = "tests/data/snapshots/"
FILES = [S + "snap_infer_llama.pickle.gz", S + "snap_cudagraph.pickle", S + "snap_train_default.pickle",
         S + "leak_eval_no_grad.pickle", S + "snap_train_oom.pickle"]
MiB = 1 << 20

bad = 0
for path in FILES:
    doc = json.loads(subprocess.run([OOMDOC, "doctor", "--json", path], cwd=ROOT, capture_output=True, text=True).stdout)
    page = subprocess.run([OOMDOC, "report", path], cwd=ROOT, capture_output=True, text=True).stdout
    blocks = re.findall(r'<script type="application/json" class="od-timeline"[^>]*>\n(.*?)\n</script>', page, re.S)
    for s in doc["snapshots"]:
        cats = s["categories"]
        if not cats or cats["at"] != "peak":
            continue
        data = [json.loads(b) for b in blocks]
        data = [d for d in data if d["device"] == s["device"]]
        if not data:
            print("FAIL %s: no timeline data for device %d" % (path, s["device"]))
            bad += 1
            continue
        D = data[0]
        page_by = {}
        for q in D["ap"]:
            name = D["cats"][D["ac"][q]]
            page_by[name] = page_by.get(name, 0) + D["ab"][q]
        worst = 0
        for name, v in cats["by_category"].items():
            diff = abs(page_by.get(name, 0) - v["bytes"])
            worst = max(worst, diff)
            if diff > MiB:
                print("FAIL %s: %s at the peak: page %d B, doctor %d B" % (path, name, page_by.get(name, 0), v["bytes"]))
                bad += 1
        shown = ", ".join("%s %.1f MiB" % (k, v / MiB) for k, v in sorted(page_by.items(), key=lambda kv: -kv[1]) if v)
        print("check_page_categories: %s: page = doctor within %d B (%s)" % (os.path.basename(path), worst, shown))
print("check_page_categories: %d snapshots, %d failed" % (len(FILES), bad))
sys.exit(1 if bad else 0)
