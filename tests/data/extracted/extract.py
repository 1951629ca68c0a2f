#!/usr/bin/env python3
"""Writes the inputs of the triage/trend/doctor tests out of the real fixtures in
../snapshots/*.json, so that every byte here is traceable to a real GPU run.
Run from this directory: python3 extract.py"""
import json
import os

SNAP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "snapshots")
OUT = os.path.dirname(os.path.abspath(__file__))


def load(name):
    with open(os.path.join(SNAP, name + ".json")) as f:
        return json.load(f)


def write(name, text):
    with open(os.path.join(OUT, name), "w") as f:
        f.write(text)


for name in ("frag_default", "frag_expandable", "snap_train_oom"):
    d = load(name)
    write(name + "_oom.txt", d["oom_message"] + "\n")
for name in ("frag_default", "snap_train_oom", "snap_train_default"):
    write(name + "_summary.txt", load(name)["memory_summary"])
write("snap_train_default_memory_stats.json",
      json.dumps(load("snap_train_default")["memory_stats"], indent=1) + "\n")
write("snap_train_oom_memory_stats.json",
      json.dumps(load("snap_train_oom")["memory_stats"], indent=1) + "\n")

# NVML series as `oomdoc watch` writes them: time_s,used_bytes
for name in ("leak_eval_no_grad", "noleak_eval"):
    rows = ["time_s,used_bytes"] + ["%r,%d" % (t, u) for t, u in load(name)["nvml_series"]]
    write(name + "_nvml.csv", "\n".join(rows) + "\n")

# Per-step logs: CSV with the names training loops use, JSON Lines with *_bytes names.
for name in ("leak_eval_no_grad", "noleak_eval", "snap_train_long", "snap_train_default"):
    log = load(name)["step_log"]
    cols = [c for c in ("step", "allocated", "reserved", "peak") if c in log[0]]
    write(name + "_steps.csv",
          ",".join(cols) + "\n" + "".join(",".join(str(r[c]) for c in cols) + "\n" for r in log))
    write(name + "_steps.jsonl", "".join(
        json.dumps({(c if c == "step" else c + "_bytes"): r[c] for c in cols}) + "\n" for r in log))

# A log as a user would paste it: training output, a traceback, the real OOM message of
# snap_train_oom, then its memory_summary() printed by an exception handler.
d = load("snap_train_oom")
write("train_oom_log.txt",
      "step 0 loss 10.4213\n"
      "Traceback (most recent call last):\n"
      '  File "/home/user/project/train.py", line 212, in <module>\n'
      "    loss = model(input_ids, labels=input_ids).loss\n"
      "torch.OutOfMemoryError: " + d["oom_message"] + "\n"
      "memory at the OOM:\n" + d["memory_summary"])

# A model's config.json as Hugging Face writes it (the hf_config the run was built from).
write("snap_train_default_config.json",
      json.dumps(load("snap_train_default")["hf_config"], indent=2, sort_keys=True) + "\n")

# torch.cuda.memory_stats() as Python prints it (the same dict as *_memory_stats.json, an
# OrderedDict sorted by key, as torch returns it). Python 3.11 prints the first two
# itself; 3.12's OrderedDict repr is "OrderedDict(" + repr of the plain dict + ")", which
# is how CPython 3.12 builds it.
import collections
import pprint
import sys

assert sys.version_info[:2] <= (3, 11), "run with Python <= 3.11: the OrderedDict([...]) form"
stats = collections.OrderedDict(load("snap_train_oom")["memory_stats"])
write("snap_train_oom_memory_stats_od311.txt", repr(stats) + "\n")
write("snap_train_oom_memory_stats_od312.txt", "OrderedDict(%r)\n" % dict(stats))
write("snap_train_oom_memory_stats_dict.txt", repr(dict(stats)) + "\n")
write("snap_train_oom_memory_stats_pprint.txt", pprint.pformat(dict(stats)) + "\n")
write("snap_train_oom_memory_stats_pprint_od311.txt", pprint.pformat(stats) + "\n")
# A paste cut short in the middle of reserved_bytes.all.current's figure: what was read
# must be exact, what was cut must be missing.
one = repr(stats)
cut = one.index("('reserved_bytes.all.current', ") + len("('reserved_bytes.all.current', ") + 4
write("snap_train_oom_memory_stats_cut.txt", one[:cut] + "\n")
# A log: training output, the traceback and OOM message, then an interactive session that
# prints the stats (the REPL's echo of the OrderedDict, then pprint of a dict()) with
# torchrun's rank prefix on every line of the second.
write("train_oom_stats_log.txt",
      "step 0 loss 10.4213\n"
      "Traceback (most recent call last):\n"
      '  File "/home/user/project/train.py", line 212, in <module>\n'
      "    loss = model(input_ids, labels=input_ids).loss\n"
      "torch.OutOfMemoryError: " + d["oom_message"] + "\n"
      ">>> import torch, pprint\n"
      ">>> torch.cuda.memory_stats()\n" + repr(stats) + "\n"
      ">>> pprint.pprint(dict(torch.cuda.memory_stats()))\n"
      + "".join("[rank0]: " + l + "\n" for l in pprint.pformat(dict(stats)).split("\n")) +
      ">>> \n")
