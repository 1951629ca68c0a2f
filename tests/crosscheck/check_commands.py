#!/usr/bin/env python3
"""Every command oomdoc suggests runs: collect each `command` and `verify_command` from
`oomdoc doctor --json` and `oomdoc triage --json` (hints) on every fixture, put a real file
in place of each <placeholder>, run it, and fail on a usage error (exit 2) or a crash.
Other exits are the command's answer (1 nothing to report or a --fail-on met, 3 a file
of another kind given for a placeholder, 4 no GPU here) and are fine.

Usage: check_commands.py OOMDOC"""
import glob
import json
import os
import shlex
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
D = os.path.join(ROOT, "tests", "data")

# A real file for each placeholder a command may carry.
PLACEHOLDERS = {
    "<config.json>": "examples/configs/llama-160m.json",
    "<command>": "true",
    "<snapshot.pickle>": "tests/data/snapshots/frag_default.pickle",
    "<new.pickle>": "tests/data/snapshots/noleak_eval.pickle",
    "<oom.pickle>": "tests/data/snapshots/snap_train_oom.pickle",
    "<new.log>": "tests/data/extracted/train_oom_log.txt",
    "<steps.csv>": "tests/data/extracted/noleak_eval_steps.csv",
    "<new_trace.json.gz>": "tests/data/profiler/torch_profiler_trace.json.gz",
    "<memory.prof>": "tests/data/profiler/jax_device_memory.prof",
}


def inputs():
    """(args for doctor) for every fixture, plus snapshot + message + config combinations."""
    out = []
    for f in sorted(glob.glob(os.path.join(D, "snapshots", "*.pickle*"))) + \
            sorted(glob.glob(os.path.join(D, "synthetic", "*.pickle"))):
        out.append([os.path.relpath(f, ROOT)])
    for f in sorted(glob.glob(os.path.join(D, "messages", "*.txt"))) + \
            sorted(glob.glob(os.path.join(D, "extracted", "*.txt"))) + \
            sorted(glob.glob(os.path.join(D, "extracted", "*.csv"))) + \
            sorted(glob.glob(os.path.join(D, "profiler", "*"))) + \
            sorted(glob.glob(os.path.join(D, "synthetic", "*.json"))) + \
            sorted(glob.glob(os.path.join(D, "synthetic", "*.txt"))):
        out.append([os.path.relpath(f, ROOT)])
    out.append(["examples/snap_train_oom.pickle", "examples/snap_train_oom.log", "--config",
                "examples/configs/llama-160m.json", "--batch", "32", "--seq", "2048"])
    out.append(["tests/data/snapshots/frag_default.pickle", "tests/data/extracted/frag_default_oom.txt"])
    out.append(["tests/data/snapshots/leak_eval_no_grad.pickle", "--gpu", "h200"])
    out.append(["tests/data/extracted/leak_eval_no_grad_steps.csv"])
    return out


def commands(oomdoc, args, triage):
    p = subprocess.run([oomdoc, "triage" if triage else "doctor", "--json"] + args, capture_output=True, text=True,
                       cwd=ROOT)
    if p.returncode == 2:
        raise SystemExit("FAIL: %s %s: usage error: %s" % ("triage" if triage else "doctor", args, p.stderr))
    try:
        doc = json.loads(p.stdout)
    except ValueError:
        return []
    found = []
    if triage:
        for r in doc.get("reports", []):
            for h in r.get("hints", []):
                if isinstance(h, dict) and h.get("command"):
                    found.append(h["command"])
    else:
        for key in ("do_now", "long_term"):
            for m in doc.get(key, []):
                if m.get("command"):
                    found.append(m["command"])
        if doc.get("verify_command"):
            found.append(doc["verify_command"])
        rep = doc.get("oom_report") or {}
        for h in rep.get("hints", []) if isinstance(rep, dict) else []:
            if isinstance(h, dict) and h.get("command"):
                found.append(h["command"])
    return found


def main():
    oomdoc = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "oomdoc"))
    seen, failures = set(), 0
    for args in inputs():
        for triage in (False, True):
            if triage and (args[0].endswith(".pickle") or ".pickle" in args[0] or "--config" in args or "--gpu" in args):
                continue
            for cmd in commands(oomdoc, args, triage):
                if cmd in seen:
                    continue
                seen.add(cmd)
                words = shlex.split(cmd)
                if not words or words[0] != "oomdoc":
                    print("FAIL: not an oomdoc command: %s" % cmd)
                    failures += 1
                    continue
                left = [w for w in words if w.startswith("<") and w.endswith(">") and w not in PLACEHOLDERS]
                if left:
                    print("FAIL: %s: placeholder without a file: %s" % (cmd, left))
                    failures += 1
                    continue
                run = [oomdoc] + [PLACEHOLDERS.get(w, w) for w in words[1:]]
                p = subprocess.run(run, capture_output=True, text=True, cwd=ROOT, stdin=subprocess.DEVNULL)
                if p.returncode == 2 or p.returncode < 0 or p.returncode >= 70:
                    print("FAIL: %s: exit %d: %s" % (cmd, p.returncode, p.stderr.strip()[:300]))
                    failures += 1
    print("check_commands: %d distinct suggested commands run, %d failed" % (len(seen), failures))
    return 1 if failures or not seen else 0


if __name__ == "__main__":
    sys.exit(main())
