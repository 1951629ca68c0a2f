"""prometheus_rules.py OOMDOC - deploy/prometheus and deploy/grafana against what
`oomdoc watch --prometheus` really serves.

promtool (Debian's prometheus package) checks the rules file and runs its unit tests
(deploy/prometheus/oomdoc-rules.test.yml: every alert fires on a synthetic series, and
stays quiet on one that only comes close), and lints the exposition watch serves
(promtool check metrics: names, units, counters). The metric names come from a live
scrape of watch fed by the fake NVML (tests/fakenvml), not from a list: every oomdoc_*
name an expression of the rules or of the dashboard uses must be served, every oomdoc:*
name must be recorded by the rules. Skips only when promtool is missing."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

OOMDOC = os.path.abspath(sys.argv[1])
FAKE = os.path.join(os.path.dirname(OOMDOC), "tests", "fakenvml", "libnvidia-ml.so.1")
RULES = "deploy/prometheus/oomdoc-rules.yml"
TESTS = "deploy/prometheus/oomdoc-rules.test.yml"
BOARD = "deploy/grafana/oomdoc.json"
NAME = re.compile(r"\b(oomdoc[_:][a-zA-Z0-9_:]*|up)\b")
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def exprs_of_rules(path):
    """Every expr: of the rules file (plain or folded >- scalars), and every record: name."""
    exprs, records = [], []
    lines = open(path).read().split("\n")
    i = 0
    while i < len(lines):
        m = re.match(r"^(\s*)-?\s*(expr|record):\s*(.*)$", lines[i])
        if m and m.group(2) == "record":
            records.append(m.group(3).strip())
        elif m:
            indent, text = len(m.group(1)), m.group(3).strip()
            if text in (">-", ">", "|", "|-"):
                body = []
                i += 1
                while i < len(lines) and (not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > indent):
                    body.append(lines[i].strip())
                    i += 1
                exprs.append(" ".join(body))
                continue
            exprs.append(text)
        i += 1
    return exprs, records


def served_metrics():
    """The names on watch's /metrics page, fed two GPUs and processes by the fake NVML."""
    tmp = tempfile.mkdtemp()
    try:
        script = os.path.join(tmp, "two.script")
        with open(script, "w") as f:
            f.write("device 150754820096 644939776 GPU-a NVIDIA H200\ndevice 150754820096 644939776 GPU-b NVIDIA H200\n")
            for k in range(40):
                f.write("sample 0 %.2f %d 4242=%d\n" % (k * 0.05, 644939776 + (k << 26), k << 26))
            f.write("sample 1 0 %d 77=1073741824\n" % (644939776 + (1 << 30)))
        env = dict(os.environ, OOMDOC_FAKENVML_SCRIPT=script, OOMDOC_NVML_LIB=FAKE)
        p = subprocess.Popen([OOMDOC, "watch", "--device", "all", "--interval", "20ms", "--duration", "4s", "--out",
                              os.path.join(tmp, "g{gpu}.csv"), "--prometheus", "127.0.0.1:0"],
                             env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            m = re.search(r"on (http://\S+/metrics)", p.stderr.readline())
            time.sleep(2.5)
            with urllib.request.urlopen(m.group(1), timeout=5) as r:
                page = r.read().decode()
        finally:
            p.kill()
            p.wait()
        return page
    finally:
        shutil.rmtree(tmp)


def main():
    promtool = shutil.which("promtool")
    if not promtool:
        print("prometheus: SKIP: promtool is not installed (Debian: apt-get install prometheus); "
              "the rules in deploy/prometheus are not checked")
        return 0
    r = subprocess.run([promtool, "check", "rules", RULES], capture_output=True, text=True)
    print(r.stdout + r.stderr, end="")
    check(r.returncode == 0, "promtool check rules " + RULES)
    r = subprocess.run([promtool, "test", "rules", os.path.basename(TESTS)], cwd=os.path.dirname(TESTS),
                       capture_output=True, text=True)
    print(r.stdout + r.stderr, end="")
    check(r.returncode == 0 and "SUCCESS" in r.stdout, "promtool test rules " + TESTS)

    page = served_metrics()
    r = subprocess.run([promtool, "check", "metrics"], input=page, capture_output=True, text=True)
    check(r.returncode == 0 and not r.stdout.strip() and not r.stderr.strip(),
          "promtool check metrics: watch's exposition follows the conventions " + (r.stdout + r.stderr).strip())
    served = set(re.findall(r"^# TYPE (\S+) ", page, re.M))
    print("watch serves %d families: %s" % (len(served), " ".join(sorted(served))))
    for needed in ("oomdoc_gpu_memory_used_bytes", "oomdoc_gpu_memory_projected_oom_seconds", "oomdoc_gpu_processes",
                   "oomdoc_process_memory_used_bytes", "oomdoc_gpu_info"):
        check(needed in served, "watch serves " + needed)

    exprs, records = exprs_of_rules(RULES)
    board = json.load(open(BOARD))
    board_exprs = [t["expr"] for p in board["panels"] for t in p.get("targets", [])]
    board_exprs += [v["query"]["query"] for v in board["templating"]["list"] if isinstance(v.get("query"), dict)]
    board_exprs += [a["expr"] for a in board["annotations"]["list"]]
    check(len(exprs) >= 11 and len(board_exprs) >= 10, "%d rule expressions, %d dashboard queries" % (len(exprs), len(board_exprs)))
    for where, es in (("rules", exprs), ("dashboard", board_exprs)):
        for e in es:
            for n in NAME.findall(e):
                if n == "up":
                    continue
                if ":" in n:
                    check(n in records, "%s: %s is a recording rule of %s" % (where, n, RULES))
                else:
                    check(n in served, "%s: %s is served by watch" % (where, n))
    check(board.get("uid") and board.get("title") and board.get("schemaVersion"), "the dashboard has a uid, title, schemaVersion")
    ids = [p["id"] for p in board["panels"]]
    check(len(ids) == len(set(ids)), "dashboard panel ids are unique")
    if failures:
        print("prometheus: %d failed" % len(failures))
        return 1
    print("prometheus: all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
