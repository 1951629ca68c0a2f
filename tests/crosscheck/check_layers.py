#!/usr/bin/env python3
# run_all: release only (the check does not depend on the build variant)
"""The library's stages are its folders, and data flows one way through them (lib/README.md):
a file under lib/STAGE/ includes only headers of its own stage and of earlier ones, an
installed header (include/oomdoc/) includes only installed headers, and every project
include names its stage ("model/trace.h", "oomdoc/snapshot.h"), so a reader sees where it
comes from. An installed header belongs to the stage of its implementation (snapshot.h to
read/, as read/snapshot.c defines it); one with no .c of its own name belongs to base/.

The check is checked too: on a copy of lib/ and include/ with an upward include planted in
base/mem.c, it must report that include and nothing else.

Usage: check_layers.py [OOMDOC] (the argument is the runner's and unused)."""
import glob
import os
import re
import sys

import shutil
import tempfile

HERE = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
ROOT = HERE
STAGES = ["base", "read", "model", "analyze", "render"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def stage_of_lib(path):
    """The stage of a file under lib/ ('read' for lib/read/triage/x.c), or None."""
    rel = os.path.relpath(path, os.path.join(ROOT, "lib")).split(os.sep)
    return rel[0] if len(rel) > 1 and rel[0] in STAGES else None


def generated():
    """The Makefile's text: a header it generates under $(GEN) (the report page's assets) is
    included by its stage path as if it were in lib/."""
    path = os.path.join(ROOT, "Makefile")
    return open(path, encoding="utf-8").read() if os.path.exists(path) else ""


def public_stage(name):
    impl = glob.glob(os.path.join(ROOT, "lib", "*", name[:-2] + ".c"))
    return stage_of_lib(impl[0]) if impl else "base"


def check():
    bad = []
    public = {os.path.basename(p) for p in glob.glob(os.path.join(ROOT, "include", "oomdoc", "*.h"))}
    files = sorted(glob.glob(os.path.join(ROOT, "lib", "**", "*.[ch]"), recursive=True))
    stray = [f for f in files if stage_of_lib(f) is None]
    for f in stray:
        bad.append("%s: not inside a stage folder (%s)" % (os.path.relpath(f, ROOT), ", ".join(STAGES)))
    for f in files:
        st = stage_of_lib(f)
        if st is None:
            continue
        text = open(f, encoding="utf-8").read()
        for inc in INCLUDE.findall(text):
            line = text[: text.find('"%s"' % inc)].count("\n") + 1
            where = "%s:%d" % (os.path.relpath(f, ROOT), line)
            top = inc.split("/")[0]
            if top == "oomdoc":
                name = inc[len("oomdoc/"):]
                if name not in public:
                    bad.append('%s: "%s" is not an installed header' % (where, inc))
                    continue
                target = public_stage(name)
            elif top in STAGES:
                if not os.path.exists(os.path.join(ROOT, "lib", inc)) and "$(GEN)/" + inc not in generated():
                    bad.append('%s: "%s" does not exist (nor does the Makefile generate it)' % (where, inc))
                    continue
                target = top
            else:
                bad.append('%s: "%s" does not name its stage (%s or oomdoc/)' % (where, inc, "/, ".join(STAGES) + "/"))
                continue
            if STAGES.index(target) > STAGES.index(st):
                bad.append('%s: %s/ includes "%s" of the later stage %s/' % (where, st, inc, target))
    for name in sorted(public):
        path = os.path.join(ROOT, "include", "oomdoc", name)
        text = open(path, encoding="utf-8").read()
        for inc in INCLUDE.findall(text):
            if inc not in public:
                bad.append('include/oomdoc/%s: includes "%s", which is not installed' % (name, inc))
    return bad, len(files), len(public)


def main():
    global ROOT
    bad, n_files, n_public = check()
    for b in bad:
        print("FAIL " + b)
    print("check_layers: %d files in %d stages, %d installed headers, %d failed"
          % (n_files, len(STAGES), n_public, len(bad)))
    with tempfile.TemporaryDirectory() as tmp:
        for d in ("lib", "include"):
            shutil.copytree(os.path.join(HERE, d), os.path.join(tmp, d))
        shutil.copy(os.path.join(HERE, "Makefile"), tmp)
        with open(os.path.join(tmp, "lib", "base", "mem.c"), "a", encoding="utf-8") as f:
            f.write('#include "render/report.h"\n')
        ROOT = tmp
        planted, _, _ = check()
        ROOT = HERE
    if len(planted) != len(bad) + 1 or not any('base/ includes "render/report.h"' in p for p in planted):
        print("FAIL check_layers missed an upward include planted in lib/base/mem.c: %s" % planted)
        return 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
