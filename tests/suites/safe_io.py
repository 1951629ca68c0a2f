"""safe_io.py OOMDOC - what oomdoc does with the files around it.

Writes (report -o, profile --svg, watch --out) go to a temporary file beside the target
and are renamed over it, /dev/shm included: a link planted at the target is replaced, never
written through; a longer old file never keeps its tail; a write that fails (a file size
limit, a full disk: named ENOSPC) or a run killed at any moment leaves the old file whole;
no temporary is left behind by a failure or by SIGINT/SIGTERM/SIGHUP. A device, a FIFO or
a socket as the target is refused (stdout and /dev/null are written in place); an output
onto an input is refused; report writes no HTML onto a terminal and says what it wrote.
Inputs that are not regular files: a FIFO without a writer does not block, a device is
refused, --nvml-lib / OOMDOC_NVML_LIB included. Names and bytes with a newline or a
terminal escape are escaped in the one-line error. A read that lasts shows its progress on
a terminal's stderr, and nowhere else. Every child process is bounded in time."""
import os
import pty
import resource
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
import unittest

OOMDOC = os.path.abspath(sys.argv[1])
FAKE = os.path.join(os.path.dirname(OOMDOC), "tests", "fakenvml", "libnvidia-ml.so.1")
SNAP = "tests/data/snapshots/leak_eval_no_grad.pickle"
BIG = "tests/data/snapshots/snap_train_long.pickle.gz"  # a report that takes a while
TIMELINE = "tests/data/profiler/torch_memory_timeline.json"
OLD = b"<html>the old page, which must survive</html>\n"


def iec(n):
    """A size as oomdoc's text prints it (base/units.h): IEC units, two decimals."""
    if n < 1024:
        return "%d B" % n
    v = float(n)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        v /= 1024.0
        if v < 1024.0:
            return "%.2f %s" % (v, unit)
    return "%.2f PiB" % (v / 1024.0)


def small_fsize():
    # A write past 4 KiB fails with EFBIG (SIGXFSZ ignored: it would kill instead).
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))


class SafeIO(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.dir, name)

    def run_oomdoc(self, args, timeout=60, **kw):
        return subprocess.run([OOMDOC] + args, capture_output=True, timeout=timeout, **kw)

    def leftovers(self, keep):
        return sorted(set(os.listdir(self.dir)) - set(keep))

    def test_report_replaces_a_planted_link_not_its_target(self):
        victim, out = self.path("victim"), self.path("report.html")
        with open(victim, "wb") as f:
            f.write(OLD)
        os.symlink(victim, out)
        r = self.run_oomdoc(["report", "-o", out, SNAP])
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(victim, "rb") as f:
            self.assertEqual(f.read(), OLD)
        st = os.lstat(out)
        self.assertTrue(stat.S_ISREG(st.st_mode))
        with open(out, "rb") as f:
            self.assertTrue(f.read().rstrip().endswith(b"</html>"))
        self.assertEqual(self.leftovers(["victim", "report.html"]), [])

    def test_report_keeps_the_mode_of_the_file_it_replaces(self):
        out = self.path("report.html")
        with open(out, "wb") as f:
            f.write(OLD)
        os.chmod(out, 0o640)
        r = self.run_oomdoc(["report", "-o", out, SNAP])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(stat.S_IMODE(os.stat(out).st_mode), 0o640)

    def test_failed_write_leaves_the_old_file(self):
        out = self.path("report.html")
        with open(out, "wb") as f:
            f.write(OLD)
        r = self.run_oomdoc(["report", "-o", out, SNAP], preexec_fn=small_fsize)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn(b"report.html: ", r.stderr)
        with open(out, "rb") as f:
            self.assertEqual(f.read(), OLD)
        self.assertEqual(self.leftovers(["report.html"]), [])

    def test_kill_during_report_leaves_a_whole_file(self):
        # SIGKILL at moments spread over the run: the page is the old one or the whole
        # new one, never a part (a killed run may leave its temporary, never a half page).
        out = self.path("report.html")
        t0 = time.monotonic()
        full = self.run_oomdoc(["report", "-o", self.path("ref.html"), BIG])
        length = time.monotonic() - t0
        self.assertEqual(full.returncode, 0, full.stderr)
        with open(self.path("ref.html"), "rb") as f:
            new = f.read()
        kept = 0
        for i in range(12):
            with open(out, "wb") as f:
                f.write(OLD)
            p = subprocess.Popen([OOMDOC, "report", "-o", out, BIG], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
            time.sleep(length * i / 10.0)
            p.kill()
            p.wait(timeout=30)
            with open(out, "rb") as f:
                got = f.read()
            self.assertIn(got, (OLD, new), "kill after %.3f s left %d bytes" % (length * i / 10.0, len(got)))
            kept += got == OLD
        print("safe_io: 12 kills over a %.2f s report: the old page whole %d times, the new one whole %d times"
              % (length, kept, 12 - kept), file=sys.stderr)

    def test_profile_svg_and_watch_out_replace_links(self):
        victim = self.path("victim")
        with open(victim, "wb") as f:
            f.write(OLD)
        svg = self.path("t.svg")
        os.symlink(victim, svg)
        r = self.run_oomdoc(["profile", "--svg", svg, TIMELINE])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertFalse(os.path.islink(svg))
        csv = self.path("w.csv")
        os.symlink(victim, csv)
        env = dict(os.environ, OOMDOC_FAKENVML_SCRIPT="tests/data/nvml/gpus_h200.script")
        r = self.run_oomdoc(["watch", "--nvml-lib", FAKE, "--duration", "200ms", "--out", csv], env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertFalse(os.path.islink(csv))
        with open(csv) as f:
            self.assertEqual(f.readline(), "time_s,used_bytes\n")
        with open(victim, "rb") as f:
            self.assertEqual(f.read(), OLD)
        # A usage error after --out was named leaves the old series alone.
        with open(self.path("old.csv"), "wb") as f:
            f.write(OLD)
        r = self.run_oomdoc(["watch", "--nvml-lib", FAKE, "--device", "7", "--out", self.path("old.csv")], env=env)
        self.assertNotEqual(r.returncode, 0)
        with open(self.path("old.csv"), "rb") as f:
            self.assertEqual(f.read(), OLD)

    def test_streams_are_written_not_replaced(self):
        r = self.run_oomdoc(["report", "-o", "/dev/null", SNAP])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(stat.S_ISCHR(os.stat("/dev/null").st_mode))
        r = self.run_oomdoc(["report", "-o", "/dev/stdout", SNAP])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout.rstrip().endswith(b"</html>"))
        # A FIFO or a device other than /dev/null is refused at once (no wait, no write).
        fifo = self.path("page.fifo")
        os.mkfifo(fifo)
        r = self.run_oomdoc(["report", "-o", fifo, SNAP], timeout=10)
        self.assertEqual(r.returncode, 3)
        self.assertIn(b"page.fifo: cannot write: is a FIFO", r.stderr)
        self.assertTrue(stat.S_ISFIFO(os.lstat(fifo).st_mode))
        for dev in ("/dev/zero", "/dev/full"):
            r = self.run_oomdoc(["report", "-o", dev, SNAP], timeout=10)
            self.assertEqual(r.returncode, 3, dev)
            self.assertIn(dev.encode() + b": cannot write: is a device", r.stderr)
        r = self.run_oomdoc(["profile", "--svg", "/dev/zero", TIMELINE], timeout=10)
        self.assertEqual(r.returncode, 3)

    def test_dev_shm_goes_through_a_temporary(self):
        # The hole: under /dev (and /proc) the target was opened in place, so a link planted
        # in the world-writable /dev/shm made the write go through it, and an existing
        # longer file kept its old tail.
        if not os.path.isdir("/dev/shm") or not os.access("/dev/shm", os.W_OK):
            self.skipTest("no writable /dev/shm")
        shm = tempfile.mkdtemp(dir="/dev/shm", prefix="oomdoc-test-")
        try:
            victim, out = os.path.join(shm, "victim"), os.path.join(shm, "r.html")
            with open(victim, "wb") as f:
                f.write(OLD)
            os.chmod(victim, 0o600)
            os.symlink(victim, out)
            r = self.run_oomdoc(["report", "-o", out, SNAP])
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(victim, "rb") as f:
                self.assertEqual(f.read(), OLD)
            self.assertTrue(stat.S_ISREG(os.lstat(out).st_mode))
            ref = self.path("ref.html")
            self.assertEqual(self.run_oomdoc(["report", "-o", ref, SNAP]).returncode, 0)
            with open(ref, "rb") as f:
                page = f.read()
            with open(out, "wb") as f:
                f.write(b"x" * (len(page) + 4096))  # longer than the page
            r = self.run_oomdoc(["report", "-o", out, SNAP])
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(out, "rb") as f:
                self.assertEqual(f.read(), page)
            self.assertEqual(sorted(os.listdir(shm)), ["r.html", "victim"])
        finally:
            for n in os.listdir(shm):
                os.unlink(os.path.join(shm, n))
            os.rmdir(shm)

    def test_signals_remove_the_temporary(self):
        out = self.path("report.html")
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            # The report may finish between seeing its temporary and the signal (a busy
            # machine): then it wrote its page whole; try again until a signal lands.
            for attempt in range(5):
                with open(out, "wb") as f:
                    f.write(OLD)
                p = subprocess.Popen([OOMDOC, "report", "-o", out, BIG], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
                seen = False
                deadline = time.monotonic() + 60
                try:
                    while p.poll() is None and time.monotonic() < deadline:
                        if any(n.startswith(".report.html.") for n in os.listdir(self.dir)):
                            p.send_signal(sig)  # while the temporary exists
                            seen = True
                            break
                    p.wait(timeout=30)
                finally:
                    if p.poll() is None:
                        p.kill()
                        p.wait()
                self.assertEqual(self.leftovers(["report.html"]), [], sig)
                with open(out, "rb") as f:
                    page = f.read()
                if p.returncode == 0:
                    self.assertTrue(page.startswith(b"<!DOCTYPE html>"), page[:40])
                    continue
                self.assertTrue(seen, "the temporary never showed up")
                self.assertEqual(p.returncode, -sig)
                self.assertEqual(page, OLD)
                break
            else:
                self.fail("signal %d never reached the report while it wrote" % sig)

    def test_full_disk_names_enospc(self):
        # A 64 KiB tmpfs in a mount namespace of its own (root only: skipped elsewhere).
        if os.geteuid() != 0 or subprocess.run(["sh", "-c", "command -v unshare"], capture_output=True).returncode:
            self.skipTest("needs root and unshare(1) for a small tmpfs")
        mnt = self.path("full")
        os.mkdir(mnt)
        script = ('mount -t tmpfs -o size=64k tmpfs "$1" || exit 99; '
                  'printf old > "$1/r.html"; "$2" report -o "$1/r.html" "$3"; rc=$?; '
                  'cat "$1/r.html"; echo; ls -a "$1"; exit $rc')
        r = subprocess.run(["unshare", "-m", "sh", "-c", script, "sh", mnt, OOMDOC, SNAP], capture_output=True,
                           timeout=60)
        if r.returncode == 99:
            self.skipTest("cannot mount a tmpfs here")
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn(b"r.html: cannot write: No space left on device (ENOSPC); the old file is left as it was",
                      r.stderr)
        self.assertEqual(r.stderr.count(b"\n"), 1, r.stderr)
        lines = r.stdout.split(b"\n")
        self.assertEqual(lines[0], b"old")
        self.assertEqual(sorted(lines[1:-1]), [b".", b"..", b"r.html"])  # no temporary left

    def test_output_onto_an_input_is_refused(self):
        snap = self.path("in.pickle")
        with open(SNAP, "rb") as f:
            data = f.read()
        with open(snap, "wb") as f:
            f.write(data)
        os.symlink(snap, self.path("alias.pickle"))
        for out in (snap, self.path("alias.pickle")):
            r = self.run_oomdoc(["report", snap, "-o", out])
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn(b"is one of the inputs", r.stderr)
        with open(snap, "rb") as f:
            self.assertEqual(f.read(), data)
        tl = self.path("tl.json")
        with open(TIMELINE, "rb") as f, open(tl, "wb") as g:
            g.write(f.read())
        r = self.run_oomdoc(["profile", "--svg", tl, tl])
        self.assertEqual(r.returncode, 2, r.stderr)

    def test_report_says_what_it_wrote_and_not_on_a_terminal(self):
        out = self.path("r.html")
        r = self.run_oomdoc(["report", "-o", out, SNAP])
        self.assertEqual(r.returncode, 0, r.stderr)
        size = os.stat(out).st_size
        self.assertEqual(r.stderr.decode(), "wrote %s (%s)\n" % (out, iec(size)))
        r = self.run_oomdoc(["--quiet", "report", "-o", out, SNAP])
        self.assertEqual(r.stderr, b"")
        # stdout a terminal, no -o: no page on it, exit 2 and the hint.
        master, slave = pty.openpty()
        try:
            p = subprocess.run([OOMDOC, "report", SNAP], stdout=slave, stderr=subprocess.PIPE, timeout=30)
            os.close(slave)
            slave = None
            got = b""
            while True:
                try:
                    c = os.read(master, 65536)
                except OSError:
                    break
                if not c:
                    break
                got += c
        finally:
            if slave is not None:
                os.close(slave)
            os.close(master)
        self.assertEqual(p.returncode, 2)
        self.assertEqual(got, b"")
        self.assertIn(b"give -o FILE", p.stderr)

    def test_nvml_lib_must_be_a_regular_file(self):
        fifo = self.path("nvml.fifo")
        os.mkfifo(fifo)
        env = dict(os.environ, OOMDOC_FAKENVML_SCRIPT="tests/data/nvml/gpus_h200.script")
        for args, e in ((["gpus", "--nvml-lib", fifo], env), (["watch", "--nvml-lib", fifo, "--duration", "1s"], env),
                        (["gpus"], dict(env, OOMDOC_NVML_LIB=fifo)), (["gpus", "--nvml-lib", "/dev/zero"], env)):
            r = self.run_oomdoc(args, timeout=10, env=e)  # it used to wait forever on the FIFO
            self.assertEqual(r.returncode, 3, (args, r.stderr))
            self.assertRegex(r.stderr.decode(), r"^oomdoc: (gpus|watch): (--nvml-lib|OOMDOC_NVML_LIB) "
                             r"\S+: is a (FIFO|device), expected a file\n$")
        r = self.run_oomdoc(["gpus", "--nvml-lib", self.path("no\x1b[2Jlib.so")], timeout=10, env=env)
        self.assertEqual(r.returncode, 4)
        self.assertNotIn(b"\x1b", r.stderr)
        self.assertIn(b"no\\e[2Jlib.so", r.stderr)

    def test_bytes_quoted_from_an_input_are_escaped(self):
        cfg = self.path("config.json")
        with open(cfg, "wb") as f:
            f.write(b"\x1b[2J\x1b]0;pwned\x07")
        r = self.run_oomdoc(["plan", "--config", cfg, "--batch", "1", "--seq", "8"])
        self.assertEqual(r.returncode, 3)
        self.assertNotIn(b"\x1b", r.stderr)
        self.assertNotIn(b"\x07", r.stderr)
        self.assertEqual(r.stderr.count(b"\n"), 1, r.stderr)
        self.assertIn(b"near '\\e", r.stderr)
        # An option's value is quoted back in the usage error: escaped too.
        for args in (["trend", "--metric", "x\x1b[2J", SNAP], ["watch", "--alarm", "\x1b]0;t\x07"],
                     ["snapshot", "--top", "\x9b2J", SNAP]):
            r = self.run_oomdoc(args)
            self.assertEqual(r.returncode, 2, args)
            self.assertNotIn(b"\x1b", r.stderr)
            self.assertNotIn(b"\x07", r.stderr)
            self.assertNotIn(b"\x9b", r.stderr)

    def test_input_path_on_stdout_is_escaped(self):
        name = self.path("snap\x1b]0;x\x07.pickle")
        with open(SNAP, "rb") as f, open(name, "wb") as g:
            g.write(f.read())
        for cmd in (["snapshot", name], ["diff", name, name]):
            r = self.run_oomdoc(cmd)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertNotIn(b"\x1b", r.stdout)
            self.assertNotIn(b"\x07", r.stdout)
            self.assertIn(b"snap\\e]0;x\\x07.pickle", r.stdout)

    def test_fifo_without_writer_does_not_block(self):
        fifo = self.path("steps.csv")
        os.mkfifo(fifo)
        # Read as an empty input (nothing to report, or "empty input"), at once.
        for cmd, code in ((["trend", fifo], 3), (["snapshot", fifo], 3), (["doctor", fifo], 1), (["triage", fifo], 1)):
            r = self.run_oomdoc(cmd, timeout=10)  # a TimeoutExpired fails the test
            self.assertEqual(r.returncode, code, (cmd, r.stderr))

    def test_device_is_refused(self):
        r = self.run_oomdoc(["trend", "/dev/zero"], timeout=10)
        self.assertEqual(r.returncode, 3)
        self.assertIn(b"/dev/zero: is a device", r.stderr)

    def test_names_are_escaped(self):
        name = self.path("bad\nname\x1b[31m.csv")
        r = self.run_oomdoc(["trend", name])
        self.assertEqual(r.returncode, 3)
        self.assertEqual(r.stderr.count(b"\n"), 1, r.stderr)
        self.assertNotIn(b"\x1b", r.stderr)
        self.assertIn(b"bad\\nname\\e[31m.csv: cannot open", r.stderr)
        with open(name, "w") as f:
            f.write("not a series\n")
        r = self.run_oomdoc(["trend", name])
        self.assertEqual(r.returncode, 3)
        self.assertEqual(r.stderr.count(b"\n"), 1, r.stderr)
        self.assertNotIn(b"\x1b", r.stderr)

    def slow_diff(self, stderr_pty, quiet=False):
        # A snapshot fed through stdin over about 2 s: the read lasts past a second.
        data = open("tests/data/snapshots/noleak_eval.pickle", "rb").read()
        master, slave = pty.openpty() if stderr_pty else os.pipe()
        p = subprocess.Popen([OOMDOC, "diff", "-", "tests/data/snapshots/noleak_eval.pickle"] + (["--quiet"] if quiet else []),
                             stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=slave,
                             env=dict(os.environ, TERM="xterm"))
        os.close(slave)
        got = []

        def drain():
            b = b""
            while True:
                try:
                    c = os.read(master, 65536)
                except OSError:
                    break
                if not c:
                    break
                b += c
            got.append(b)

        t = threading.Thread(target=drain)
        t.start()
        try:
            step = len(data) // 20 + 1
            for i in range(0, len(data), step):
                p.stdin.write(data[i:i + step])
                p.stdin.flush()
                time.sleep(0.1)
            p.stdin.close()
            p.wait(timeout=30)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            t.join(timeout=10)
            os.close(master)
        self.assertEqual(p.returncode, 0)
        return got[0]

    def test_progress_on_a_terminal_only(self):
        tty = self.slow_diff(True)
        self.assertRegex(tty, rb"\roomdoc: reading <stdin>: \d+\.\d\d MiB\x1b\[K")
        self.assertTrue(tty.endswith(b"\r\x1b[K"), tty)  # the line is cleared at the end
        self.assertEqual(self.slow_diff(False), b"")

    def test_quiet_turns_progress_off(self):
        self.assertEqual(self.slow_diff(True, quiet=True), b"")


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
