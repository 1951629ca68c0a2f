#!/usr/bin/env python3
# run_all: release only (the check does not depend on the build variant)
"""One diagnosis, rendered by every view: for each input set and flags, the document that
`oomdoc report` embeds (<script type="application/json" id="od-diagnosis">) equals, key for
key, what `oomdoc doctor --json` prints for the same inputs and flags; the page's Do now /
Long term items carry the same actions, checks and commands; and doctor's text names the
same verdict and items (it is printed from the document).

Usage: check_one_diagnosis.py OOMDOC"""
import html
import json
import os
import re
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
OOMDOC = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else os.path.join(ROOT, "oomdoc")
S = "tests/data/snapshots/"
E = "tests/data/extracted/"
CASES = [
    ("the demo: a capped OOM with its message", [S + "snap_train_oom.pickle", "examples/snap_train_oom.log"]),
    ("the same without the message", [S + "snap_train_oom.pickle"]),
    ("fragmentation with the cap given", [S + "frag_default.pickle", "--capacity", "2GiB"]),
    ("a leak with its step log", [S + "leak_eval_no_grad.pickle", E + "leak_eval_no_grad_steps.csv"]),
    ("a snapshot against its plan on an H200", [S + "snap_train_default.pickle", "--config",
                                                E + "snap_train_default_config.json", "--batch", "8", "--seq", "512",
                                                "--gpu", "h200"]),
    ("an inference trace", [S + "snap_infer_llama.pickle.gz"]),
    ("a CUDA-graph capture", [S + "snap_cudagraph.pickle"]),
    ("a log and a series", [E + "train_oom_log.txt", E + "leak_eval_no_grad_nvml.csv"]),
]


def run(args):
    p = subprocess.run([OOMDOC] + args, cwd=ROOT, capture_output=True, text=True, env=dict(os.environ, NO_COLOR="1"))
    if p.returncode not in (0, 1):
        raise SystemExit("FAIL %s: exit %d: %s" % (" ".join(args), p.returncode, p.stderr.strip()))
    return p.stdout


def items(arr):
    return [(m["action"], m["check"]["method"], m["check"]["detail"], m["command"]) for m in arr]


bad = 0
for what, args in CASES:
    doc = json.loads(run(["doctor", "--json"] + args))
    page = run(["report"] + args)
    m = re.search(r'<script type="application/json" id="od-diagnosis">\n(.*?)\n</script>', page, re.S)
    if not m:
        print("FAIL %s: the page embeds no diagnosis" % what)
        bad += 1
        continue
    embedded = json.loads(m.group(1))
    if embedded != doc:
        keys = sorted(k for k in set(doc) | set(embedded) if doc.get(k) != embedded.get(k))
        print("FAIL %s: the page's diagnosis differs from doctor's in %s" % (what, ", ".join(keys)))
        bad += 1
        continue
    # what the page shows is that document: every action, check and command, in order
    section = page[page.index('<section class="diagnosis card">'):]
    section = html.unescape(section[: section.index("</section>")])
    pos = 0
    for action, method, detail, command in items(doc["do_now"]) + items(doc["long_term"]):
        for piece in [action] + ([detail] if detail else []) + (["$ " + command] if command else []):
            at = section.find(piece, pos)
            if at < 0:
                print("FAIL %s: the page does not show %r where doctor has it" % (what, piece[:80]))
                bad += 1
                break
            pos = at
    # doctor --html writes the page of the same run: the report's page, byte for byte
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        run(["doctor", "--json", "--html", os.path.join(tmp, "p.html")] + args)
        if open(os.path.join(tmp, "p.html"), encoding="utf-8").read() != page:
            print("FAIL %s: doctor --html's page differs from report's" % what)
            bad += 1
    text = run(["doctor"] + args)
    if not text.startswith("verdict: %s\n" % doc["verdict"]):
        print("FAIL %s: doctor's text gives another verdict than its document" % what)
        bad += 1
    for action, _, _, command in items(doc["do_now"]) + items(doc["long_term"]):
        if action not in text or (command and "$ " + command not in text):
            print("FAIL %s: doctor's text lacks %r" % (what, action[:80]))
            bad += 1
    print("check_one_diagnosis: %s: %s, %d do-now, %d long-term, same in doctor, --json and the page"
          % (what, doc["verdict"], len(doc["do_now"]), len(doc["long_term"])))
print("check_one_diagnosis: %d input sets, %d failed" % (len(CASES), bad))
sys.exit(1 if bad else 0)
