"""check_gpus_nvidia_smi.py OOMDOC - `oomdoc gpus --json` against what nvidia-smi printed on
the same idle H200 (tests/data/measured/nvidia-smi-q-memory.txt and nvidia-smi-query.csv).

The fake NVML (tests/fakenvml) is given only what NVML's v1 call returned on that machine
before torch started (context_overhead.json: nvml_before_torch, total and used = the
driver's reserve on an idle GPU). oomdoc must then report, through the v2 path, the
figures nvidia-smi showed: Total 143771 MiB, Used 0 MiB, Free 143156 MiB, Reserved 616 MiB
(nvidia-smi rounds; we accept 1 MiB)."""
import json
import os
import re
import subprocess
import sys
import tempfile

oomdoc = os.path.abspath(sys.argv[1])
fake = os.path.join(os.path.dirname(oomdoc), "tests", "fakenvml", "libnvidia-ml.so.1")
before = json.load(open("tests/data/measured/context_overhead.json"))["nvml_before_torch"]
smi = open("tests/data/measured/nvidia-smi-q-memory.txt").read()
fb = smi.split("FB Memory Usage")[1].split("BAR1")[0]
want = {k: int(re.search(k + r"\s*:\s*(\d+) MiB", fb).group(1)) for k in ("Total", "Reserved", "Used", "Free")}
csv = open("tests/data/measured/nvidia-smi-query.csv").read().splitlines()[1].split(", ")
name = csv[0]
MiB = 1 << 20
ok = True

with tempfile.NamedTemporaryFile("w", suffix=".script", delete=False) as f:
    f.write("device %d %d GPU-h200 %s\n" % (before["total"], before["used"], name))
    f.write("sample 0 0 %d\n" % before["used"])
    script = f.name
try:
    env = dict(os.environ, OOMDOC_FAKENVML_SCRIPT=script)
    r = subprocess.run([oomdoc, "gpus", "--json", "--nvml-lib", fake], env=env, capture_output=True,
                       text=True, timeout=30)
finally:
    os.unlink(script)
if r.returncode != 0:
    print("check_gpus_nvidia_smi: exit %d: %s" % (r.returncode, r.stderr))
    sys.exit(1)
g = json.loads(r.stdout)["gpus"][0]
got = {"Total": g["total_bytes"] / MiB, "Used": g["used_bytes"] / MiB, "Free": g["free_bytes"] / MiB,
       "Reserved": g["reserved_bytes"] / MiB}
for k in ("Total", "Used", "Free"):
    if round(got[k]) != want[k]:
        ok = False
        print("check_gpus_nvidia_smi: %s %.2f MiB, nvidia-smi %d MiB" % (k, got[k], want[k]))
if abs(got["Reserved"] - want["Reserved"]) > 1:
    ok = False
    print("check_gpus_nvidia_smi: Reserved %.2f MiB, nvidia-smi %d MiB" % (got["Reserved"], want["Reserved"]))
if g["name"] != name:
    ok = False
    print("check_gpus_nvidia_smi: name %r, nvidia-smi %r" % (g["name"], name))
sys.exit(0 if ok else 1)
