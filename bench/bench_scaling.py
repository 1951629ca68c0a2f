#!/usr/bin/env python3
"""Benchmark: how oomdoc scales with the length of a snapshot's trace.

The real 1 000 000-event snapshot (tests/data/snapshots/snap_train_long.pickle.gz) and two
longer ones that bench/gen_long.py makes from it (about 3 M and 10 M events: its
steady-state span repeated with shifted times and the same addresses, written by
pickle.dump) are read by snapshot --json, doctor --json (from the file, and piped into its
standard input, which cannot be opened again), replay --json and report. For each
the table gives wall and CPU time (user + system, the child's rusage), peak RSS as the
kernel counts it (mapped file pages included) and RSS per trace event.

Baselines measured in the same run, on the 1 M-event file:
  - Python's pickle.load with the garbage collector off (the fastest a Python tool can
    load the file), CPU time of the load alone;
  - reading the file from the page cache (cat > /dev/null), the floor for any reader;
  - walking its opcodes without building any value (bench/pickle_walk.c, read() in 1 MiB
    chunks), the floor for a pickle reader that steps through the opcodes one by one.
Goals (issue: scale and robustness): at 10 M events snapshot <= 256 MiB and doctor
<= 512 MiB peak RSS, doctor <= 2.5x snapshot's CPU time; at 1 M events snapshot --json
>= 20x pickle.load by CPU time.

Usage: bench_scaling.py [OOMDOC] [--runs N] (N: runs per cell, best kept; default 3)"""
import gzip
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GZ = os.path.join(ROOT, "tests", "data", "snapshots", "snap_train_long.pickle.gz")
OUT = os.path.join(ROOT, "bench", "out")
GOALS = {"snapshot": 256, "doctor": 512, "doctor -": 512}


def run(argv, stdout=subprocess.DEVNULL, pipe_from=None):
    """(wall s, cpu s, peak RSS MiB, stderr) of one child process; pipe_from: a file that
    cat writes into its standard input through a pipe (cat's own time is not counted)."""
    t = time.perf_counter()
    cat = subprocess.Popen(["cat", pipe_from], stdout=subprocess.PIPE) if pipe_from else None
    p = subprocess.Popen(argv, stdout=stdout, stderr=subprocess.PIPE, stdin=cat.stdout if cat else None)
    if cat:
        cat.stdout.close()
    err = p.stderr.read().decode(errors="replace")
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    if cat:
        cat.wait()
    p.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("benchmark command failed: %s\n%s" % (" ".join(argv), err))
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024.0, err


def best(argv, runs, pipe_from=None):
    """The best wall and CPU time of `runs` runs, and the largest peak RSS."""
    rs = [run(argv, pipe_from=pipe_from) for _ in range(runs)]
    return min(r[0] for r in rs), min(r[1] for r in rs), max(r[2] for r in rs)


def inputs():
    """[(label, path, events)] for the 1 M file and the generated 3 M and 10 M ones."""
    os.makedirs(OUT, exist_ok=True)
    plain = os.path.join(OUT, "snap_train_long.pickle")
    if not os.path.exists(plain) or os.path.getsize(plain) == 0:
        with gzip.open(GZ, "rb") as src, open(plain, "wb") as dst:
            shutil.copyfileobj(src, dst)
    files = [("1M", plain, 1000000)]
    for label, goal in (("3M", 3000000), ("10M", 10000000)):
        path = os.path.join(OUT, "snap_train_long_%s.pickle" % label)
        note = path + ".events"
        if not os.path.exists(note):
            sys.stderr.write("bench_scaling: making %s (a minute or two)\n" % os.path.basename(path))
            out = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gen_long.py"), plain, str(goal), path],
                                 check=True, capture_output=True, text=True).stdout
            events = int(out.split(": ")[1].split()[0])
            with open(note, "w") as f:
                f.write("%d\n" % events)
        with open(note) as f:
            files.append((label, path, int(f.read())))
    return files


def main():
    args = [a for a in sys.argv[1:]]
    runs = 3
    if "--runs" in args:
        runs = int(args[args.index("--runs") + 1])
        del args[args.index("--runs"):args.index("--runs") + 2]
    oomdoc = os.path.abspath(args[0] if args else os.path.join(ROOT, "oomdoc"))
    files = inputs()
    html = os.path.join(OUT, "scaling_report.html")
    # "doctor -": the file piped into standard input, which cannot be opened again by name
    commands = [("snapshot", ["snapshot", "--json"]), ("doctor", ["doctor", "--json"]),
                ("doctor -", ["doctor", "--json", "-"]), ("replay", ["replay", "--json"]),
                ("report", ["report", "-o", html])]

    print("scaling benchmark: %s and its longer copies (bench/gen_long.py)" % os.path.basename(GZ))
    print("  %-5s %-9s %11s %8s %8s %10s %8s" % ("trace", "command", "events", "wall s", "cpu s", "peak RSS", "B/event"))
    table = {}
    for label, path, events in files:
        for name, argv in commands:
            piped = argv[-1] == "-"
            wall, cpu, rss = best([oomdoc] + argv + ([] if piped else [path]), runs, path if piped else None)
            table[(label, name)] = (wall, cpu, rss)
            print("  %-5s %-9s %11d %8.2f %8.2f %6.0f MiB %8.1f" %
                  (label, name, events, wall, cpu, rss, rss * 1048576 / events))

    plain = files[0][1]
    code = ("import gc,pickle,sys,time;gc.disable();f=open(sys.argv[1],'rb');t=time.process_time();"
            "pickle.load(f);sys.stderr.write('%.6f' % (time.process_time()-t))")
    py_cpu = min(float(run([sys.executable, "-c", code, plain])[3]) for _ in range(runs))
    cat_cpu = min(run(["cat", plain])[1] for _ in range(runs))
    walker = os.path.join(OUT, "pickle_walk")
    subprocess.run(["cc", "-std=c11", "-O2", "-D_POSIX_C_SOURCE=200809L", "-o", walker,
                    os.path.join(ROOT, "bench", "pickle_walk.c")], check=True)
    walk_cpu = min(run([walker, plain])[1] for _ in range(runs))
    od_cpu = table[("1M", "snapshot")][1]
    print("  baselines on the 1 M-event file (CPU s): python3 pickle.load, gc off %.3f; "
          "cat from the page cache %.3f; opcode walk, no values built %.3f" % (py_cpu, cat_cpu, walk_cpu))

    ok = True
    for name, goal in GOALS.items():
        rss = table[("10M", name)][2]
        met = rss <= goal
        ok &= met
        print("  %s at 10 M events: %.0f MiB peak RSS (goal <= %d MiB): %s" % (name, rss, goal, "met" if met else "NOT met"))
    ratio = table[("10M", "doctor")][1] / table[("10M", "snapshot")][1]
    print("  doctor / snapshot CPU at 10 M events: %.2fx (goal <= 2.5x): %s" % (ratio, "met" if ratio <= 2.5 else "NOT met"))
    speed = py_cpu / od_cpu
    print("  snapshot --json vs pickle.load at 1 M events, CPU: %.1fx (goal >= 20x): %s; %.1fx the page-cache read, "
          "%.1fx the opcode walk (which is itself %.1fx pickle.load)" %
          (speed, "met" if speed >= 20 else "NOT met", od_cpu / cat_cpu if cat_cpu else float("inf"),
           od_cpu / walk_cpu if walk_cpu else float("inf"), py_cpu / walk_cpu if walk_cpu else float("inf")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
