"""prometheus_e2e.py OOMDOC - the fleet path end to end: `oomdoc watch --prometheus` fed by
the fake NVML (tests/fakenvml) playing back the NVML samples recorded on a real H200 during
the leak fixture's run (tests/data/snapshots/leak_eval_no_grad.json: idle, CUDA context
and model load, then the leak that ran the GPU out of memory), 20 times slower than it
happened; a real Prometheus (Debian's package) on 127.0.0.1 - a random free port, a
temporary storage directory, 1 s scrape and evaluation intervals - scraping it with
deploy/prometheus/oomdoc-rules.yml; and Prometheus's HTTP API asked until
OomdocGPUOOMSoon fires.

The rules are the shipped file with one change: every `for:` is 5 s instead of minutes
(the run lasts seconds, not hours); expressions, thresholds and labels are the file's.
The alert must fire on the leak, not on the warm-up before it (the model load's jumps
make the projection dip for a second or two: pending at most), and the time from the
leak's start to the alert is printed. Bounded to about a minute;
every process is killed at the end."""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

OOMDOC = os.path.abspath(sys.argv[1])
FAKE = os.path.join(os.path.dirname(OOMDOC), "tests", "fakenvml", "libnvidia-ml.so.1")
FIX = json.load(open("tests/data/snapshots/leak_eval_no_grad.json"))
SERIES, BEFORE, LOG = FIX["nvml_series"], FIX["nvml_before_torch"], FIX["step_log"]
T0 = SERIES[0][0]
SKIP = 9.0     # the recording is idle for its first 9.27 s
SPEED = 0.05   # played 20 times slower
RESERVE = BEFORE["used"]
PID = 4194399
LIMIT_S = 75


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url, timeout=2):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.status, r.read().decode()


def wall(t_rec, start):
    """Wall-clock time of recording time t_rec (seconds from the recording's first sample)."""
    return start + (t_rec - SKIP) / SPEED


def main():
    prom = shutil.which("prometheus")
    if not prom:
        print("prometheus_e2e: SKIP: the prometheus binary is not installed (Debian: apt-get install prometheus)")
        return 0
    tmp = tempfile.mkdtemp()
    procs = []
    try:
        script = os.path.join(tmp, "leak.script")
        with open(script, "w") as f:
            f.write("after_end hold\nspeed %r\n" % SPEED)
            f.write("device %d %d GPU-5d3b7a2e NVIDIA H200\n" % (BEFORE["total"], RESERVE))
            for t, v in SERIES:
                if t - T0 >= SKIP:
                    extra = " %d=%d" % (PID, v - RESERVE) if v > RESERVE else ""
                    f.write("sample 0 %.6f %d%s\n" % (t - T0 - SKIP, v, extra))
        rules = os.path.join(tmp, "oomdoc-rules.yml")
        with open("deploy/prometheus/oomdoc-rules.yml") as f, open(rules, "w") as g:
            g.write(re.sub(r"(?m)^(\s*for:\s*)\S+$", r"\g<1>5s", f.read()))
        env = dict(os.environ, OOMDOC_FAKENVML_SCRIPT=script, OOMDOC_NVML_LIB=FAKE)
        w = subprocess.Popen([OOMDOC, "watch", "--interval", "100ms", "--duration", "%ds" % LIMIT_S, "--out",
                              os.path.join(tmp, "run.csv"), "--prometheus", "127.0.0.1:0"],
                             env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        procs.append(w)
        start = time.monotonic()  # the fake NVML's clock starts at watch's nvmlInit, just before
        line = w.stderr.readline()
        m = re.search(r"on http://(127\.0\.0\.1:\d+)/metrics", line)
        if not m:
            print("prometheus_e2e: FAIL: watch did not serve: " + line)
            return 1
        target = m.group(1)
        port = free_port()
        cfg = os.path.join(tmp, "prometheus.yml")
        with open(cfg, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                    "rule_files:\n  - %s\n"
                    "scrape_configs:\n  - job_name: oomdoc\n    static_configs:\n      - targets: ['%s']\n"
                    % (rules, target))
        p = subprocess.Popen([prom, "--config.file=" + cfg, "--storage.tsdb.path=" + os.path.join(tmp, "data"),
                              "--web.listen-address=127.0.0.1:%d" % port, "--log.level=warn"],
                             stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, "prometheus.log"), "w"))
        procs.append(p)
        api = "http://127.0.0.1:%d" % port
        while True:
            try:
                if get(api + "/-/ready")[0] == 200:
                    break
            except OSError:
                pass
            if time.monotonic() - start > 20 or p.poll() is not None:
                print("prometheus_e2e: FAIL: prometheus did not become ready:\n" +
                      open(os.path.join(tmp, "prometheus.log")).read())
                return 1
            time.sleep(0.2)
        ready = time.monotonic() - start
        first_pending = first_firing = None
        firing = None
        while time.monotonic() - start < LIMIT_S - 5:
            _, body = get(api + "/api/v1/alerts")
            for a in json.loads(body)["data"]["alerts"]:
                if a["labels"]["alertname"] != "OomdocGPUOOMSoon":
                    continue
                now = time.monotonic() - start
                if a["state"] == "pending" and first_pending is None:
                    first_pending = now
                if a["state"] == "firing":
                    first_firing, firing = now, a
            if firing:
                break
            time.sleep(0.25)
        growth = next(t - T0 for t, v in SERIES if v > RESERVE + (4 << 20))  # memory starts to grow
        step1 = LOG[1]["t"] - T0  # the first step of the steady growth (step_log)
        print("prometheus_e2e: Prometheus ready %.1f s after watch started; recording played at %gx" % (ready, SPEED))
        if not firing:
            print("prometheus_e2e: FAIL: OomdocGPUOOMSoon never fired (pending first at %s)" % first_pending)
            _, body = get(api + "/api/v1/query?query=oomdoc_gpu_memory_projected_oom_seconds")
            print(body)
            return 1
        t_growth, t_step1 = wall(growth, 0), wall(step1, 0)
        print("prometheus_e2e: OomdocGPUOOMSoon pending at %.1f s, firing at %.1f s after watch started"
              % (first_pending if first_pending is not None else float("nan"), first_firing))
        print("prometheus_e2e: memory starts to grow at %.1f s, the leaking steps start at %.1f s (step 1): "
              "the alert fired %.1f s after the first growth, %.1f s after step 1 (%.2f s and %.2f s of the "
              "run as it happened)" % (t_growth, t_step1, first_firing - t_growth, first_firing - t_step1,
                                       (first_firing - t_growth) * SPEED, (first_firing - t_step1) * SPEED))
        print("prometheus_e2e: the alert: labels %s, value %s, summary: %s"
              % (json.dumps(firing["labels"], sort_keys=True), firing["value"], firing["annotations"]["summary"]))
        ok = True
        # It fired on the leak, not on the warm-up (the model load's jumps make the projection
        # dip for a second or two: pending at most, never for the 5 s the rule asks).
        if first_firing < t_step1:
            print("prometheus_e2e: FAIL: fired %.1f s before the leaking steps began" % (t_step1 - first_firing))
            ok = False
        for k, v in (("alertname", "OomdocGPUOOMSoon"), ("severity", "critical"), ("job", "oomdoc"), ("gpu", "0"),
                     ("uuid", "GPU-5d3b7a2e"), ("instance", target)):
            if firing["labels"].get(k) != v:
                print("prometheus_e2e: FAIL: label %s is %r, expected %r" % (k, firing["labels"].get(k), v))
                ok = False
        if not 0 < float(firing["value"]) < 15 * 60:
            print("prometheus_e2e: FAIL: value %s is not a projection under 15 minutes" % firing["value"])
            ok = False
        # The recording rules ran on the same scrape.
        _, body = get(api + "/api/v1/query?query=oomdoc:gpu_memory_used:ratio")
        res = json.loads(body)["data"]["result"]
        if not res or not 0 < float(res[0]["value"][1]) < 1:
            print("prometheus_e2e: FAIL: oomdoc:gpu_memory_used:ratio: %s" % body)
            ok = False
        print("prometheus_e2e: %s (%.1f s)" % ("passed" if ok else "FAILED", time.monotonic() - start))
        return 0 if ok else 1
    finally:
        for pr in procs:
            if pr.poll() is None:
                pr.send_signal(signal.SIGTERM)
                try:
                    pr.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    pr.kill()
                    pr.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
