#!/usr/bin/env python3
"""check_triage_corpus.py OOMDOC [DIR] [--split held_in|held_out|all] [--misses] [--min N]

Score `oomdoc triage --json` on a corpus of real pasted reports against its manifest
(DIR/manifest.jsonl: one object per file, the thread's runtime, verdict and printed figures,
labelled by hand from the thread, never by oomdoc). A file is read right when the first
report has the runtime's framework (and library, for runtimes that are framework "other"),
the manifest's verdict, and every figure the manifest lists that triage reports (requested,
total, free, allocated, reserved, reserved-but-unallocated, PyTorch < 1.4's cached, MPS's max
allowed and other allocations, "Process N has") within 0.5%.

Prints the score per split (framework, verdict, figures, all three) and, with --misses, each
miss. Exits 1 when the score of the chosen split is below --min (a fraction; by default the
score measured when the corpus was added, 134 of 193), so `make check` fails when a change
reads fewer reports right.

DIR defaults to tests/data/messages/real (the corpus copied into the repository)."""
import json
import os
import subprocess
import sys

MEASURED = 134 / 193  # held-in 70/97, held-out 64/96 when the corpus was added
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")

# runtime -> (framework, library or None: any)
FRAMEWORKS = {"pytorch-cuda", "pytorch-rocm", "pytorch-mps", "pytorch-xla", "tensorflow", "jax", "vllm",
              "deepspeed", "nccl", "cublas", "cudnn", "host", "onnxruntime"}
LIBRARY = {"lua-torch": "torch7", "torch-directml": "directml"}
ENGINES = {"tgi", "sglang"}  # engines on PyTorch: their own wordings are framework "other" or PyTorch's


def expected_framework(runtime):
    if runtime in FRAMEWORKS:
        return runtime, None
    if runtime.startswith("other:"):
        name = runtime[6:]
        return "other", None if name == "custom-cuda" else name
    return "other", LIBRARY.get(runtime, runtime)


def framework_ok(runtime, rep):
    fw, lib = expected_framework(runtime)
    if runtime in ENGINES:
        return rep["framework"] in ("other", "pytorch-cuda") and rep["library"] == runtime
    if rep["framework"] != fw:
        return False
    return lib is None or rep["library"] == lib


def close(want, got):
    return got is not None and abs(want - got) <= max(want, got) * 0.005 + 1


def figure_misses(fig, rep):
    """The manifest's figures that the report does not give (name, wanted, got)."""
    out = []
    ru = rep.get("reserved_unallocated_bytes")
    checks = [
        ("requested_bytes", fig.get("requested_bytes"), rep.get("requested_bytes")),
        ("total_bytes", fig.get("total_bytes"), rep.get("capacity_bytes")),
        ("free_bytes", fig.get("free_bytes"), rep.get("free_bytes")),
        ("allocated_bytes", fig.get("allocated_bytes"), rep.get("allocated_bytes")),
    ]
    if fig.get("reserved_bytes") is not None:
        a = rep.get("allocated_bytes")
        checks.append(("reserved_bytes", fig["reserved_bytes"], a + ru if a is not None and ru is not None else None))
    other = fig.get("other") or {}
    for key in ("reserved_unallocated_bytes", "cached_bytes"):
        if other.get(key) is not None:
            checks.append((key, other[key], ru))
    if other.get("max_allowed_bytes") is not None:
        checks.append(("max_allowed_bytes", other["max_allowed_bytes"], rep.get("allowed_bytes")))
    if other.get("other_allocations_bytes") is not None:
        p, a = rep.get("process_bytes"), rep.get("allocated_bytes")
        checks.append(("other_allocations_bytes", other["other_allocations_bytes"],
                       p - a if p is not None and a is not None else None))
    for key, want in other.items():
        if key.startswith("process_") and key.endswith("_bytes") and isinstance(want, int):
            pid = key[len("process_"):-len("_bytes")]
            got = [p["bytes"] for p in rep.get("other_processes", []) if str(p["pid"]) == pid]
            if not got and rep.get("process_bytes") is not None:
                got = [rep["process_bytes"]]  # "Process N" that is this process (a container)
            checks.append((key, want, got[0] if got else None))
    for name, want, got in checks:
        if want is not None and not close(want, got):
            out.append((name, want, got))
    return out


def triage(oomdoc, path):
    p = subprocess.run([oomdoc, "triage", "--json", path], capture_output=True, text=True)
    if p.returncode not in (0, 1):
        return None, "exit %d: %s" % (p.returncode, p.stderr.strip()[:200])
    return json.loads(p.stdout), None


def main():
    args = [a for a in sys.argv[1:]]
    misses = "--misses" in args
    split, minimum = "all", MEASURED
    if "--split" in args:
        split = args[args.index("--split") + 1]
    if "--min" in args:
        minimum = float(args[args.index("--min") + 1])
    pos = [a for i, a in enumerate(args) if not a.startswith("--") and (i == 0 or args[i - 1] not in ("--split", "--min"))]
    oomdoc = pos[0] if pos else os.path.join(ROOT, "oomdoc")
    corpus = pos[1] if len(pos) > 1 else os.path.join(ROOT, "tests", "data", "messages", "real")
    rows = [json.loads(l) for l in open(os.path.join(corpus, "manifest.jsonl")) if l.strip()]
    score = {}
    for row in rows:
        if split != "all" and row["split"] != split:
            continue
        s = score.setdefault(row["split"], {"n": 0, "framework": 0, "verdict": 0, "figures": 0, "all": 0})
        s["n"] += 1
        doc, err = triage(oomdoc, os.path.join(corpus, row["file"]))
        rep = doc["reports"][0] if doc and doc["reports"] else None
        why = []
        if err:
            why.append(err)
        elif rep is None:
            why.append("no report")
        else:
            fw = framework_ok(row["runtime"], rep)
            vd = rep["verdict"]["name"] == row["verdict"]
            fm = figure_misses(row["figures"], rep)
            s["framework"] += fw
            s["verdict"] += vd
            s["figures"] += not fm
            s["all"] += fw and vd and not fm
            if not fw:
                why.append("framework %s/%s, want %s" % (rep["framework"], rep["library"], row["runtime"]))
            if not vd:
                why.append("verdict %s, want %s" % (rep["verdict"]["name"], row["verdict"]))
            for name, want, got in fm:
                why.append("%s %s, want %d" % (name, got, want))
        if why and misses:
            print("miss %s: %s" % (row["file"], "; ".join(why)))
    ok = True
    for name in sorted(score):
        s = score[name]
        frac = s["all"] / s["n"] if s["n"] else 0
        print("%-8s %3d reports: framework %3d, verdict %3d, figures %3d; all three %3d = %.1f%%" %
              (name, s["n"], s["framework"], s["verdict"], s["figures"], s["all"], 100 * frac))
    if minimum is not None:
        n = sum(s["n"] for s in score.values())
        a = sum(s["all"] for s in score.values())
        if n == 0 or a / n < minimum:
            print("FAIL check_triage_corpus: %d of %d read right, below %.1f%%" % (a, n, 100 * minimum))
            ok = False
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
