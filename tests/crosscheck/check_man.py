#!/usr/bin/env python3
# run_all: release only (the check does not depend on the build variant)
"""Every man page is roff text a reader sees as written: no control byte but the line break
and tab (a Python string's "\\fB" once wrote a form feed and a stray "B" into
oomdoc-doctor.1, so "--torch-version" read as "B--torch-versionR"), and, where groff is
installed, no warning from it.

Usage: check_man.py OOMDOC (the argument is the runner's; the pages are read from man/)"""
import glob
import os
import shutil
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
bad = 0
pages = sorted(glob.glob(os.path.join(ROOT, "man", "*.1")))
for page in pages:
    data = open(page, "rb").read()
    for i, b in enumerate(data):
        if b < 0x20 and b not in (0x0a, 0x09):
            line = data.count(b"\n", 0, i) + 1
            print("FAIL %s:%d: control byte 0x%02x" % (os.path.relpath(page, ROOT), line, b))
            bad += 1
            break
    if shutil.which("groff"):
        p = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", page], capture_output=True, text=True)
        if p.stderr.strip():
            print("FAIL %s: groff: %s" % (os.path.relpath(page, ROOT), p.stderr.strip().splitlines()[0]))
            bad += 1
print("check_man: %d pages, %d failed" % (len(pages), bad))
sys.exit(1 if bad else 0)
