#!/usr/bin/env python3
"""bench_textin.py [OOMDOC] - text inputs are streamed: memory is what the analysis keeps.

Generates a step log of ROWS rows (default 10 million: step, allocated, reserved, as the
training hook writes them) and a training log of as many lines ending in an OOM message,
then measures wall time and peak RSS (the OS's count) of `trend` and `doctor` on the step
log, `triage` and `doctor` on the log, and `triage` on a gzip bomb (2 GB of zeros, 2 MB
compressed). Baseline in the same run: `cat` of the step log (reading it, the floor).

Budgets: a step-log row costs at most 40 bytes of peak RSS (24 kept: its three numbers as
doubles, 8 for the fit's scratch, the rest slack); the log costs at most 64 MiB whatever its
length (only the lines around the OOM are kept); the bomb stops within 0.5 s and 64 MiB."""
import gzip
import os
import subprocess
import sys
import tempfile
import time

OOMDOC = sys.argv[1] if len(sys.argv) > 1 else "./oomdoc"
ROWS = int(os.environ.get("ROWS", "10000000"))
MiB = 1 << 20


def measure(argv, stdin=None):
    """(seconds, peak RSS bytes, exit status) of one run. Through /usr/bin/time when there
    is one: a child forked from this process starts its peak RSS count at this process's."""
    t0 = time.monotonic()
    if os.path.exists("/usr/bin/time"):
        with tempfile.NamedTemporaryFile("r") as out:
            rc = subprocess.call(["/usr/bin/time", "-o", out.name, "-f", "%M"] + argv, stdin=stdin,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            t = time.monotonic() - t0
            return t, int(out.read().split()[-1]) * 1024, rc
    p = subprocess.Popen(argv, stdin=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    return time.monotonic() - t0, ru.ru_maxrss * 1024, os.waitstatus_to_exitcode(status)


def write_steps(path):
    a = 4363850240
    with open(path, "w") as f:
        f.write("step,allocated,reserved\n")
        chunk = []
        for i in range(ROWS):
            chunk.append(f"{i},{a + i * 4096},{2 * a + (i // 1000) * 2097152}\n")
            if len(chunk) == 100000:
                f.write("".join(chunk))
                chunk = []
        f.write("".join(chunk))


def write_log(path):
    line = "[rank0] epoch 3 step {} loss 0.4321 lr 2.0e-05 tokens/s 12345 grad_norm 0.87\n"
    with open(path, "w") as f:
        chunk = []
        for i in range(ROWS):
            chunk.append(line.format(i))
            if len(chunk) == 100000:
                f.write("".join(chunk))
                chunk = []
        f.write("".join(chunk))
        f.write("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
                "capacity of 79.15 GiB of which 1.06 GiB is free. Including non-PyTorch memory, this process "
                "has 78.08 GiB memory in use. Of the allocated memory 75.50 GiB is allocated by PyTorch, and "
                "1.20 GiB is reserved by PyTorch but unallocated.\n")


def main():
    ok = True
    with tempfile.TemporaryDirectory() as d:
        steps, log, bomb = os.path.join(d, "steps.csv"), os.path.join(d, "train.log"), os.path.join(d, "bomb.gz")
        write_steps(steps)
        write_log(log)
        with gzip.open(bomb, "wb", compresslevel=1) as g:
            zeros = bytes(MiB)
            for _ in range(2048):
                g.write(zeros)
        size = os.path.getsize(steps)
        print(f"bench_textin: {ROWS} rows, step log {size / 1e6:.0f} MB, log {os.path.getsize(log) / 1e6:.0f} MB, "
              f"bomb {os.path.getsize(bomb) / 1e6:.1f} MB of gzip (2 GB inflated)")
        t, rss, _ = measure(["cat", steps])
        print(f"  baseline cat step log:   {t:6.2f} s  {rss / MiB:7.1f} MiB")
        for label, argv, budget in [
            ("trend step log", [OOMDOC, "trend", steps], 40 * ROWS),
            ("doctor step log", [OOMDOC, "doctor", steps], 40 * ROWS),
            ("triage log", [OOMDOC, "triage", log], 64 * MiB),
            ("doctor log", [OOMDOC, "doctor", log], 64 * MiB),
        ]:
            t, rss, rc = measure(argv)
            per_row = f"  {rss / ROWS:5.1f} B/row" if "step" in label else ""
            good = rss <= budget and rc in (0, 1)
            ok &= good
            print(f"  {label + ':':24} {t:6.2f} s  {rss / MiB:7.1f} MiB{per_row}  (budget {budget / MiB:.0f} MiB)"
                  f"{'' if good else '  FAIL (exit %d)' % rc}")
        with open(bomb, "rb") as f:
            t, rss, rc = measure([OOMDOC, "triage", "-"], stdin=f)
        good = rc == 3 and t < 0.5 and rss <= 64 * MiB
        ok &= good
        print(f"  {'triage gzip bomb:':24} {t:6.2f} s  {rss / MiB:7.1f} MiB  exit {rc} (expected 3, < 0.5 s)"
              f"{'' if good else '  FAIL'}")
    print("  PASS" if ok else "  FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
