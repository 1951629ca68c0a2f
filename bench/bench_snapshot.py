#!/usr/bin/env python3
"""Benchmark: `oomdoc snapshot --json` on the real 88 MB / 1 000 000-event snapshot against
Python's bare pickle.load of the same uncompressed file, measured in the same run.

Goal (issue: foundation): oomdoc >= 20x faster than the bare load, peak RSS <= 120 MiB.
Times are the best of N runs, the programs taking turns; RSS is the child's ru_maxrss as
the kernel counts it.
Usage: bench_snapshot.py [OOMDOC] [--runs N]"""
import gzip
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GZ = os.path.join(ROOT, "tests", "data", "snapshots", "snap_train_long.pickle.gz")
OUT = os.path.join(ROOT, "bench", "out")


def run(argv):
    """Wall seconds and peak RSS (MiB) of one child process."""
    t = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    err = p.stderr.read().decode()
    p.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("benchmark command failed: %s\n%s" % (" ".join(argv), err))
    return wall, ru.ru_maxrss / 1024.0, err


def main():
    oomdoc = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith("-") else
                             os.path.join(ROOT, "oomdoc"))
    runs = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 9
    os.makedirs(OUT, exist_ok=True)
    plain = os.path.join(OUT, "snap_train_long.pickle")
    if not os.path.exists(plain) or os.path.getsize(plain) == 0:
        with gzip.open(GZ, "rb") as src, open(plain, "wb") as dst:
            shutil.copyfileobj(src, dst)
    size_mb = os.path.getsize(plain) / 1e6

    # Baseline: the bare load inside Python (interpreter start-up excluded from its time).
    code = ("import pickle,sys,time;f=open(sys.argv[1],'rb');t=time.perf_counter();"
            "pickle.load(f);sys.stderr.write('%.6f' % (time.perf_counter()-t))")
    # The runs of the three take turns, so that a busy spell of a shared machine falls on
    # all of them rather than on one; each side keeps its best time.
    py_times, py_rss, od_times, od_rss, gz_times, gz_rss = [], [], [], [], [], []
    for i in range(runs):
        if i < max(2, runs // 2):
            _, rss, err = run([sys.executable, "-c", code, plain])
            py_times.append(float(err))
            py_rss.append(rss)
        wall, rss, _ = run([oomdoc, "snapshot", "--json", plain])
        od_times.append(wall)
        od_rss.append(rss)
        if i < max(2, runs // 2):
            wall, rss, _ = run([oomdoc, "snapshot", "--json", GZ])
            gz_times.append(wall)
            gz_rss.append(rss)

    py_t, od_t, gz_t = min(py_times), min(od_times), min(gz_times)
    ratio = py_t / od_t
    print("snapshot benchmark: %s (%.1f MB uncompressed, 1 000 000 trace entries)" %
          (os.path.basename(GZ), size_mb))
    print("  %-44s %9s %10s" % ("", "time (s)", "peak RSS"))
    print("  %-44s %9.3f %6.0f MiB" % ("python3 pickle.load (baseline, bare load)", py_t, max(py_rss)))
    print("  %-44s %9.3f %6.0f MiB" % ("oomdoc snapshot --json (uncompressed)", od_t, max(od_rss)))
    print("  %-44s %9.3f %6.0f MiB" % ("oomdoc snapshot --json (.gz)", gz_t, max(gz_rss)))
    print("  speed-up vs baseline: %.1fx (goal >= 20x): %s" % (ratio, "met" if ratio >= 20 else "NOT met"))
    print("  peak RSS: %.0f MiB (goal <= 120 MiB): %s" %
          (max(od_rss), "met" if max(od_rss) <= 120 else "NOT met"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
