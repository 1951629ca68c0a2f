"""watch_live.py OOMDOC - `oomdoc watch` run for real against the fake libnvidia-ml.so.1
(tests/fakenvml), which plays back the NVML samples recorded on a real H200 during the
leak fixture's run (leak_eval_no_grad.json: nvml_series, nvml_before_torch). Expected
values come from that file (its step_log and nvml_* records), never from oomdoc.

Checks: the CSV / JSONL series (format, monotone time, values that exist in the
recording), the verdict and growth against the step_log's rate, the alarm, the command's
exit status and signal forwarding, a device lost mid-run, a command that cannot run, the
Prometheus endpoint queried with a real HTTP client on 127.0.0.1 (and the warning for
every spelling of "all interfaces"), the live table on a terminal (no CSV there), every
GPU's series with --device all, and a steady climb after a plateau. Every child process
is bounded in time."""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

OOMDOC = os.path.abspath(sys.argv[1])
FAKE = os.path.join(os.path.dirname(OOMDOC), "tests", "fakenvml", "libnvidia-ml.so.1")
FIX = json.load(open("tests/data/snapshots/leak_eval_no_grad.json"))
BEFORE = FIX["nvml_before_torch"]  # total, used (= the driver reserve: nothing running yet)
SERIES = FIX["nvml_series"]
T0 = SERIES[0][0]
SKIP = 9.0  # the recording is idle (flat) for its first 9.27 s: start playback at 9.0 s
LOG = FIX["step_log"]
# What NVML saw grow: torch's reserved memory, step 1 -> step 7 of the real run.
RATE = (LOG[7]["reserved"] - LOG[1]["reserved"]) / (LOG[7]["t"] - LOG[1]["t"])
RESERVE = BEFORE["used"]
PID = 4194399  # above PID_MAX_LIMIT: a PID of another namespace


def write_script(path, after_end="hold", speed=1.0, skip=SKIP):
    with open(path, "w") as f:
        f.write("after_end %s\nspeed %r\n" % (after_end, speed))
        f.write("device %d %d GPU-5d3b7a2e NVIDIA H200\n" % (BEFORE["total"], RESERVE))
        for t, v in SERIES:
            if t - T0 < skip:
                continue
            extra = " %d=%d" % (PID, v - RESERVE) if v > RESERVE else ""
            f.write("sample 0 %.6f %d%s\n" % (t - T0 - skip, v, extra))
    return SERIES[-1][0] - T0 - skip  # playback length in recording seconds


class Watch(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.script = os.path.join(cls.tmp.name, "leak.script")
        cls.length = write_script(cls.script)
        cls.env = dict(os.environ, OOMDOC_FAKENVML_SCRIPT=cls.script, OOMDOC_NVML_LIB=FAKE,
                       NO_COLOR="1")
        cls.used_v2 = {v - RESERVE for _, v in SERIES}

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def read(self, path):
        with open(path) as f:
            return f.read()

    def path(self, name):
        return os.path.join(self.tmp.name, name)

    def run_watch(self, args, timeout=20, env=None):
        return subprocess.run([OOMDOC, "watch"] + args, env=env or self.env, capture_output=True,
                              text=True, timeout=timeout)

    def test_leak_run_csv_verdict_alarm_and_exit_status(self):
        csv = self.path("run.csv")
        # The command lasts as long as the recording and exits 3: watch must return 3.
        r = self.run_watch(["--interval", "10ms", "--out", csv, "--json", "--alarm", "0.2",
                            "--", "sh", "-c", "sleep %.3f; exit 3" % self.length])
        self.assertEqual(r.returncode, 3, r.stderr)
        lines = self.read(csv).splitlines()
        self.assertEqual(lines[0], "time_s,used_bytes")
        times, used = [], []
        for ln in lines[1:]:
            self.assertRegex(ln, r"^\d+\.\d{3},\d+$")
            t, u = ln.split(",")
            times.append(float(t))
            used.append(int(u))
        self.assertGreater(len(used), 60)  # ~150 at 10 ms, fewer on a loaded machine
        self.assertEqual(times, sorted(times))
        # NVML v2 of the fake: used = the recorded v1 value less the driver reserve.
        for u in used:
            self.assertIn(u, self.used_v2)
        self.assertEqual(used, sorted(used))  # the recording only grows
        s = json.loads(r.stdout)
        self.assertEqual(s["schema_version"], 1)
        self.assertEqual(s["device"]["total_bytes"], BEFORE["total"])
        self.assertEqual(s["device"]["capacity_bytes"], BEFORE["total"] - RESERVE)
        self.assertEqual(s["device"]["memory_info_version"], 2)
        self.assertEqual(s["peak_bytes"], max(used))
        self.assertEqual(s["samples"], len(used))
        self.assertEqual(s["command"]["exit_code"], 3)
        self.assertEqual(s["trend"]["verdict"], "leak")
        g = s["trend"]["growth_bytes_per_second"]
        print("watch: growth %.4g B/s vs step_log %.4g B/s (%+.1f%%), %d samples"
              % (g, RATE, 100 * (g - RATE) / RATE, len(used)), file=sys.stderr)
        self.assertLess(abs(g - RATE), 0.20 * RATE)
        proj = s["trend"]["projected_oom_seconds"]
        self.assertAlmostEqual(proj, (s["device"]["capacity_bytes"] - s["last_bytes"]) / g, delta=1e-3 * proj)
        # 0.2 min = 12 s: the projection (~5 s at the end) crossed it.
        self.assertTrue(s["alarm"]["raised"])
        self.assertIn("ALARM: GPU 0: projected OOM in", r.stderr)
        procs = {p["pid"]: p for p in s["processes"]}
        self.assertEqual(procs[PID]["peak_bytes"], SERIES[-1][1] - RESERVE)

    def test_jsonl_with_pid(self):
        out = self.path("run.jsonl")
        r = self.run_watch(["--interval", "20ms", "--duration", "700ms", "--pid", str(PID),
                            "--out", out, "--nvml-lib", FAKE])
        self.assertEqual(r.returncode, 0, r.stderr)
        rows = [json.loads(x) for x in self.read(out).splitlines()]
        self.assertGreater(len(rows), 5)
        for row in rows:
            self.assertEqual(sorted(row), ["process_used_bytes", "time_s", "used_bytes"])
            self.assertIn(row["used_bytes"], self.used_v2)
            # The scripted process holds all but the reserve: same as v2's used.
            self.assertEqual(row["process_used_bytes"], row["used_bytes"])
        self.assertIn("oomdoc watch: GPU 0 (NVIDIA H200, GPU-5d3b7a2e)", r.stderr)

    def test_signal_is_forwarded_to_the_command(self):
        p = subprocess.Popen([OOMDOC, "watch", "--interval", "50ms", "--out", self.path("sig.csv"), "--",
                              "sh", "-c", "trap 'kill $!; exit 42' TERM; sleep 30 >/dev/null 2>&1 & wait"],
                             env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            time.sleep(0.5)
            p.send_signal(signal.SIGTERM)
            out, err = p.communicate(timeout=10)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        self.assertEqual(p.returncode, 42, err)

    def test_command_that_cannot_run(self):
        r = self.run_watch(["--out", self.path("x.csv"), "--", "/nonexistent/train.py"])
        self.assertEqual(r.returncode, 127)
        self.assertIn("cannot run '/nonexistent/train.py'", r.stderr)

    def test_device_lost_mid_run(self):
        script = self.path("lost.script")
        length = write_script(script, after_end="lost", speed=4.0)
        env = dict(self.env, OOMDOC_FAKENVML_SCRIPT=script)
        csv = self.path("lost.csv")
        r = self.run_watch(["--interval", "10ms", "--out", csv, "--duration", "5s"], env=env)
        self.assertEqual(r.returncode, 4, r.stderr)
        self.assertIn("GPU is lost", r.stderr)
        self.assertIn("(device lost)", r.stderr)
        rows = self.read(csv).splitlines()[1:]
        self.assertGreater(len(rows), 5)
        last_t = float(rows[-1].split(",")[0])
        self.assertLess(last_t, length / 4.0 + 1.0)  # stopped at the loss, not at 5 s

    def test_prometheus_endpoint(self):
        p = subprocess.Popen([OOMDOC, "watch", "--interval", "20ms", "--duration", "8s", "--pid", str(PID),
                              "--out", self.path("prom.csv"), "--prometheus", "127.0.0.1:0"],
                             env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            line = p.stderr.readline()
            m = re.search(r"serving Prometheus metrics on (http://127\.0\.0\.1:(\d+)/metrics)", line)
            self.assertIsNotNone(m, line)
            url, port = m.group(1), int(m.group(2))
            time.sleep(self.length + 0.3)  # past the end of the recording
            with urllib.request.urlopen(url, timeout=5) as resp:
                self.assertEqual(resp.status, 200)
                self.assertTrue(resp.headers["Content-Type"].startswith("text/plain; version=0.0.4"))
                body = resp.read().decode()
            metrics = {}
            for ln in body.splitlines():
                if ln.startswith("#"):
                    self.assertRegex(ln, r"^# (HELP|TYPE) oomdoc_[a-z_]+ ")
                    continue
                mm = re.fullmatch(r'([a-z_]+)\{([^}]*)\} (\S+)', ln)
                self.assertIsNotNone(mm, ln)
                metrics[(mm.group(1), mm.group(2))] = float(mm.group(3))
            dev = 'gpu="0",uuid="GPU-5d3b7a2e"'
            proc = dev + ',pid="%d"' % PID
            last_v2 = SERIES[-1][1] - RESERVE
            self.assertEqual(metrics[("oomdoc_gpu_memory_total_bytes", dev)], BEFORE["total"])
            self.assertEqual(metrics[("oomdoc_gpu_memory_used_bytes", dev)], last_v2)
            self.assertEqual(metrics[("oomdoc_gpu_memory_peak_bytes", dev)], last_v2)
            self.assertEqual(metrics[("oomdoc_gpu_up", dev)], 1)
            self.assertEqual(metrics[("oomdoc_process_memory_used_bytes", proc)], last_v2)
            self.assertGreater(metrics[("oomdoc_gpu_memory_growth_bytes_per_second", dev)], 0)
            self.assertGreater(metrics[("oomdoc_watch_samples_total", dev)], 10)
            oom = metrics[("oomdoc_gpu_memory_projected_oom_seconds", dev)]
            self.assertTrue(oom > 0)
            # Other paths and methods, and a request that is not HTTP.
            with self.assertRaises(urllib.error.HTTPError) as e:
                urllib.request.urlopen("http://127.0.0.1:%d/nope" % port, timeout=5)
            self.assertEqual(e.exception.code, 404)
            req = urllib.request.Request(url, data=b"x", method="POST")
            with self.assertRaises(urllib.error.HTTPError) as e:
                urllib.request.urlopen(req, timeout=5)
            self.assertEqual(e.exception.code, 405)
            with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
                s.sendall(b"\x16\x03\x01\x02\x00garbage\r\n\r\n")
                self.assertTrue(s.recv(100).startswith(b"HTTP/1.1 400 "))
            # A client that connects and says nothing must not stop the sampling for long.
            silent = socket.create_connection(("127.0.0.1", port), timeout=5)
            with urllib.request.urlopen(url, timeout=5) as resp:
                self.assertEqual(resp.status, 200)
            silent.close()
        finally:
            try:
                out, err = p.communicate(timeout=15)
            finally:
                if p.poll() is None:
                    p.kill()
                    p.wait()
        self.assertEqual(p.returncode, 0, err)

    def test_stalled_clients_do_not_stop_sampling(self):
        # 16 clients that connect and say nothing and 16 that send a request one byte at a
        # time, each replaced as soon as the endpoint drops it, for the whole run: the
        # samples must stay on their 100 ms grid (every gap under 2x the interval) and a
        # real scrape must still be answered.
        csv = self.path("stall.csv")
        interval = 0.1
        p = subprocess.Popen([OOMDOC, "watch", "--interval", "100ms", "--duration", "6s", "--out", csv,
                              "--prometheus", ":0"],
                             env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        socks = []
        try:
            line = p.stderr.readline()
            m = re.search(r"serving Prometheus metrics on http://127\.0\.0\.1:(\d+)/metrics", line)
            self.assertIsNotNone(m, line)  # ":PORT" is this machine only
            port = int(m.group(1))
            request = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"

            def connect(slow):
                s = socket.create_connection(("127.0.0.1", port), timeout=5)
                s.setblocking(False)
                return [s, slow, 0]

            socks = [connect(False) for _ in range(16)] + [connect(True) for _ in range(16)]
            scraped = None
            end = time.monotonic() + 4
            while time.monotonic() < end:
                for i, entry in enumerate(socks):
                    s, slow, sent = entry
                    try:
                        if s.recv(4096) == b"":
                            raise ConnectionResetError
                    except BlockingIOError:
                        pass
                    except OSError:  # dropped by the endpoint: take its place again
                        s.close()
                        socks[i] = connect(slow)
                        continue
                    if slow and sent < len(request) - 1:
                        try:
                            s.send(request[sent:sent + 1])
                            entry[2] += 1
                        except OSError:
                            pass
                if scraped is None and time.monotonic() > end - 2:
                    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=5) as resp:
                        scraped = resp.status
                time.sleep(0.25)
            out, err = p.communicate(timeout=15)
        finally:
            for s, _, _ in socks:
                s.close()
            if p.poll() is None:
                p.kill()
                p.wait()
        self.assertEqual(p.returncode, 0, err)
        self.assertEqual(scraped, 200)
        times = [float(ln.split(",")[0]) for ln in self.read(csv).splitlines()[1:]]
        self.assertGreater(len(times), 30)
        gap = max(b - a for a, b in zip(times, times[1:]))
        print("watch: 16 idle + 16 slow clients: %d samples, largest gap %.3f s (interval %.3f s)"
              % (len(times), gap, interval), file=sys.stderr)
        self.assertLess(gap, 2 * interval)

    def test_prometheus_wildcard_is_pointed_out(self):
        r = self.run_watch(["--duration", "200ms", "--out", self.path("wild.csv"), "--prometheus", "0.0.0.0:0"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("listens on every interface", r.stderr)
        # IPv6's any and IPv4's any mapped into IPv6 are every interface too.
        try:
            socket.socket(socket.AF_INET6, socket.SOCK_STREAM).close()
            have_v6 = True
        except OSError:
            have_v6 = False
        for spelling in ("[::]:0", "[::ffff:0.0.0.0]:0", "[0:0:0:0:0:ffff:0:0]:0") if have_v6 else ():
            r = self.run_watch(["--duration", "200ms", "--out", self.path("wild6.csv"), "--prometheus", spelling])
            if "cannot listen" in r.stderr:
                continue  # no IPv6 stack here
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("listens on every interface", r.stderr, spelling)
        r = self.run_watch(["--duration", "200ms", "--out", self.path("local.csv"), "--prometheus", ":0"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("every interface", r.stderr)
        self.assertRegex(r.stderr, r"on http://127\.0\.0\.1:\d+/metrics")

    def test_live_status_line_on_a_terminal(self):
        import pty
        master, slave = pty.openpty()
        try:
            r = subprocess.run([OOMDOC, "watch", "--interval", "20ms", "--duration", "600ms",
                                "--out", self.path("tty.csv")], env=dict(self.env, TERM="xterm"),
                               stdout=subprocess.DEVNULL, stderr=slave, timeout=20)
            os.close(slave)
            slave = None
            data = b""
            while True:
                try:
                    chunk = os.read(master, 65536)
                except OSError:
                    break
                if not chunk:
                    break
                data += chunk
        finally:
            if slave is not None:
                os.close(slave)
            os.close(master)
        self.assertEqual(r.returncode, 0)
        text = data.decode(errors="replace")
        self.assertRegex(text, r"\r\[oomdoc watch\] \d+\.\ds GPU 0 used \d")

    def pty_run(self, args, env, timeout=20, columns=None):
        """Run oomdoc with stdout on a terminal (a pty); returns (exit code, what the terminal got)."""
        import pty
        master, slave = pty.openpty()
        if columns:
            import fcntl
            import struct
            import termios
            fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
        data = b""
        try:
            p = subprocess.Popen([OOMDOC] + args, env=env, stdout=slave, stderr=subprocess.PIPE)
            os.close(slave)
            slave = None
            import select
            end = time.monotonic() + timeout
            while time.monotonic() < end:
                rd, _, _ = select.select([master], [], [], 0.2)
                if rd:
                    try:
                        chunk = os.read(master, 65536)
                    except OSError:
                        break
                    if not chunk:
                        break
                    data += chunk
                elif p.poll() is not None:
                    break
            p.wait(timeout=10)
            err = p.stderr.read()
            p.stderr.close()
        finally:
            if slave is not None:
                os.close(slave)
            os.close(master)
        return p.returncode, data.decode(errors="replace"), err.decode(errors="replace")

    def test_live_table_on_a_terminal(self):
        # The hole: on a terminal without --out, CSV rows and the status line ran into each
        # other ("...peak 338.61 MiB0.100,555060224"). Now a table redrawn in place, no CSV.
        env = dict(self.env, TERM="xterm")
        env.pop("COLUMNS", None)
        rc, out, err = self.pty_run(["watch", "--interval", "20ms", "--duration", "1500ms"], env, columns=100)
        self.assertEqual(rc, 0, err)
        self.assertNotIn("time_s,used_bytes", out)
        self.assertNotRegex(out, r"\d+\.\d{3},\d{6,}")  # no CSV row
        self.assertIn("oomdoc watch", out)
        self.assertIn("USED / CAPACITY", out)
        self.assertRegex(out, r"0 +NVIDIA H200 +[\d.]+ [KMG]iB / 139\.80 GiB")
        self.assertIn("\x1b[4A", out)  # redrawn in place: 4 lines up (title, header, GPU, processes)
        self.assertIn("(stopped)", out)
        # every line fits the 100 columns
        for ln in re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", out).replace("\r", "\n").split("\n"):
            self.assertLessEqual(len(ln), 100, ln)
        self.assertIn("oomdoc watch: GPU 0 (NVIDIA H200", err)  # the summary, on stderr
        # --out - on a terminal is the CSV, as asked
        rc, out, err = self.pty_run(["watch", "--interval", "50ms", "--duration", "300ms", "--out", "-"], env)
        self.assertEqual(rc, 0, err)
        self.assertIn("time_s,used_bytes", out)

    def test_steady_climb_after_a_plateau(self):
        # 20 s flat at 5 GB (after a 0.5 s load), then +2 GB/s for 2 s; played 8x fast.
        script = self.path("climb.script")
        with open(script, "w") as f:
            f.write("speed 8\ndevice %d %d GPU-climb NVIDIA H200\n" % (BEFORE["total"], RESERVE))
            f.write("sample 0 0 %d\n" % (RESERVE + 600000000))
            for i in range(5, 221):
                t = i * 0.1
                f.write("sample 0 %.3f %d\n" % (t, RESERVE + 5000000000 + (int(2e9 * (t - 20)) if t > 20 else 0)))
        env = dict(self.env, OOMDOC_FAKENVML_SCRIPT=script)
        r = self.run_watch(["--interval", "20ms", "--duration", "2750ms", "--out", self.path("climb.csv"), "--json"],
                           env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        s = json.loads(r.stdout)
        print("watch: climb after a plateau: %s, %.4g B/s (truth 2e9 B/s per script second = 1.6e10 B/s played 8x)"
              % (s["trend"]["verdict"], s["trend"]["growth_bytes_per_second"]), file=sys.stderr)
        self.assertEqual(s["trend"]["verdict"], "leak")
        g = s["trend"]["growth_bytes_per_second"]
        self.assertLess(abs(g - 8 * 2e9), 0.25 * 8 * 2e9)  # played 8x faster than scripted

    def test_all_gpus_prometheus_and_one_series_each(self):
        # Two GPUs: GPU 0 plays the leak recording, GPU 1 stays at its reserve.
        script = self.path("two.script")
        write_script(script)
        with open(script, "a") as f:
            f.write("device %d %d GPU-second NVIDIA H200\nsample 1 0 %d\n" % (BEFORE["total"], RESERVE, RESERVE))
        env = dict(self.env, OOMDOC_FAKENVML_SCRIPT=script)
        # One target for two GPUs: a gpu column (a file, and stdout when it is a pipe).
        r = subprocess.run([OOMDOC, "watch", "--device", "all", "--out", self.path("both.csv"), "--interval", "50ms",
                            "--duration", "600ms"], env=env, capture_output=True, text=True, timeout=20)
        self.assertEqual(r.returncode, 0, r.stderr)
        r2 = subprocess.run([OOMDOC, "watch", "--device", "all", "--interval", "50ms", "--duration", "600ms"],
                            env=env, capture_output=True, text=True, timeout=20)
        self.assertEqual(r2.returncode, 0, r2.stderr)
        for text in (self.read(self.path("both.csv")), r2.stdout):
            lines = text.splitlines()
            self.assertEqual(lines[0], "time_s,gpu,used_bytes")
            gpus = [ln.split(",")[1] for ln in lines[1:]]
            self.assertGreater(gpus.count("0"), 3)
            self.assertEqual(gpus.count("0"), gpus.count("1"))  # both sampled at every tick
            for ln in lines[1:]:
                t, g, u = ln.split(",")
                if g == "1":
                    self.assertEqual(int(u), 0)  # GPU 1 holds its reserve only: v2's used is 0
                else:
                    self.assertIn(int(u), self.used_v2)
        # trend reads one GPU's series: two GPUs in one are refused, never mixed into one fit
        r3 = subprocess.run([OOMDOC, "trend", self.path("both.csv")], capture_output=True, text=True, timeout=20)
        self.assertEqual(r3.returncode, 3, r3.stdout)
        self.assertIn("a second GPU in one series (gpu 1 after gpu 0)", r3.stderr)
        p = subprocess.Popen([OOMDOC, "watch", "--device", "all", "--interval", "20ms", "--duration", "4s",
                              "--out", self.path("g{gpu}.csv"), "--json", "--prometheus", "127.0.0.1:0"],
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            port = re.search(r":(\d+)/metrics", p.stderr.readline()).group(1)
            time.sleep(self.length + 0.3)
            with urllib.request.urlopen("http://127.0.0.1:%s/metrics" % port, timeout=5) as resp:
                body = resp.read().decode()
            out, err = p.communicate(timeout=15)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        self.assertEqual(p.returncode, 0, err)
        used = dict(re.findall(r'^oomdoc_gpu_memory_used_bytes\{gpu="(\d)",[^}]*\} (\d+)$', body, re.M))
        self.assertEqual(used, {"0": str(SERIES[-1][1] - RESERVE), "1": "0"})
        # One HELP/TYPE per family, both GPUs under it.
        self.assertEqual(body.count("# TYPE oomdoc_gpu_memory_used_bytes gauge"), 1)
        doc = json.loads(out)
        self.assertEqual([d["device"]["index"] for d in doc["devices"]], [0, 1])
        self.assertEqual([d["peak_bytes"] for d in doc["devices"]], [SERIES[-1][1] - RESERVE, 0])
        self.assertEqual(doc["devices"][1]["trend"]["verdict"], "stable")
        for g in (0, 1):
            self.assertEqual(self.read(self.path("g%d.csv" % g)).splitlines()[0], "time_s,used_bytes")

    def test_names_from_nvml_are_escaped(self):
        # A GPU name and UUID as a driver (or a fake one) may report them: escape sequences
        # and a byte that is not UTF-8.
        script = self.path("evil.script")
        with open(script, "wb") as f:
            f.write(b"device %d %d GPU-\x1b[2Jx NVIDIA\x1b]0;all good\x07 H200\xff\n" % (BEFORE["total"], RESERVE))
            f.write(b"sample 0 0 %d\n" % (RESERVE + (1 << 30)))
        env = dict(self.env, OOMDOC_FAKENVML_SCRIPT=script)
        r = subprocess.run([OOMDOC, "gpus"], env=env, capture_output=True, timeout=20)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn(b"\x1b", r.stdout)
        self.assertNotIn(b"\x07", r.stdout)
        self.assertIn(b"NVIDIA\\e]0;all good\\x07 H200\\xff", r.stdout)
        r = subprocess.run([OOMDOC, "gpus", "--json"], env=env, capture_output=True, timeout=20)
        self.assertEqual(r.returncode, 0, r.stderr)
        g = json.loads(r.stdout.decode("utf-8"))["gpus"][0]  # valid UTF-8, the name kept
        self.assertEqual(g["name"], "NVIDIA\x1b]0;all good\x07 H200\ufffd")
        r = self.run_watch(["--duration", "300ms", "--out", self.path("evil.csv")], env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("\x1b", r.stderr)
        self.assertNotIn("\x07", r.stderr)

    def test_gpus_names_a_visible_process(self):
        script = self.path("mine.script")
        with open(script, "w") as f:
            f.write("device %d %d GPU-5d3b7a2e NVIDIA H200\n" % (BEFORE["total"], RESERVE))
            f.write("sample 0 0 %d %d=1073741824 %d=2048\n" % (RESERVE + (1 << 30) + 2048, os.getpid(), PID))
        r = subprocess.run([OOMDOC, "gpus", "--json"], env=dict(self.env, OOMDOC_FAKENVML_SCRIPT=script),
                           capture_output=True, text=True, timeout=20)
        self.assertEqual(r.returncode, 0, r.stderr)
        procs = json.loads(r.stdout)["gpus"][0]["processes"]
        with open("/proc/self/comm") as f:
            me = f.read().strip()
        self.assertEqual(procs[0], {"pid": os.getpid(), "used_bytes": 1 << 30, "visible": True,
                                    "process_name": me})
        self.assertEqual(procs[1]["visible"], False)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
