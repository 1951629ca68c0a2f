"""terminal.py OOMDOC - what oomdoc's text looks like on a terminal (a pty of a chosen
size): every line fits the width (COLUMNS, else the terminal's own size), a wrapped line
goes on under its first word, list marker or table column, no word and no number's unit
is lost or split at a space, and the same command into a pipe gives the very bytes it
gave before (COLUMNS or not), so golden files and scripts are unaffected. JSON is never
wrapped. Escape sequences from a snapshot never reach the terminal. Expected values come
from the pipe output of the same command, never from the wrapping code."""
import fcntl
import json
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
import unittest

OOMDOC = os.path.abspath(sys.argv[1])
DEMO = ["doctor", "examples/snap_train_oom.pickle", "examples/snap_train_oom.log"]
SGR = re.compile(r"\x1b\[[0-9;]*m")


def on_pty(args, columns, env_columns=None, timeout=60):
    """Run oomdoc with stdout on a pty of `columns` columns; its output as text (CRLF -> LF)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    env = dict(os.environ, TERM="xterm")
    env.pop("COLUMNS", None)
    env.pop("NO_COLOR", None)
    if env_columns:
        env["COLUMNS"] = str(env_columns)
    p = subprocess.Popen([OOMDOC] + args, stdout=slave, stderr=subprocess.PIPE, env=env)
    os.close(slave)
    data = b""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        r, _, _ = select.select([master], [], [], 0.2)
        if r:
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
    p.stderr.close()
    os.close(master)
    return p.returncode, data.decode().replace("\r\n", "\n")


def piped(args, env_columns=None):
    env = dict(os.environ)
    env.pop("COLUMNS", None)
    if env_columns:
        env["COLUMNS"] = str(env_columns)
    r = subprocess.run([OOMDOC] + args, capture_output=True, env=env, timeout=60)
    return r.returncode, r.stdout.decode()


class Terminal(unittest.TestCase):
    def check_wrapped(self, args, width, env_columns=None):
        rc_t, tty = on_pty(args, width if not env_columns else 200, env_columns)
        rc_p, pipe = piped(args)
        self.assertEqual(rc_t, rc_p)
        plain = SGR.sub("", tty)
        lines = plain.split("\n")
        long_pipe = [ln for ln in pipe.split("\n") if len(ln) > width]
        self.assertTrue(long_pipe, "nothing to wrap at %d columns" % width)
        for ln in lines:
            self.assertLessEqual(len(ln), width, ln)
        # Nothing lost or changed: the same characters, only the whitespace differs.
        self.assertEqual(re.sub(r"\s+", "", plain), re.sub(r"\s+", "", pipe))
        # Sizes keep their unit on the same line.
        for a, b in zip(lines, lines[1:]):
            self.assertFalse(re.search(r"\d$", a) and re.match(r"\s*(B|KiB|MiB|GiB|TiB|s|ms)\b", b),
                             "a number ends a line, its unit starts the next:\n%s\n%s" % (a, b))
        return pipe, plain, long_pipe

    def test_doctor_fits_80_columns_from_COLUMNS(self):
        pipe, tty, long_pipe = self.check_wrapped(DEMO, 80, env_columns=80)
        print("terminal: doctor demo: %d of %d lines over 80 columns in a pipe (longest %d); on an 80-column "
              "terminal %d lines, the longest %d" % (len(long_pipe), pipe.count("\n"), max(map(len, long_pipe)),
                                                     tty.count("\n"), max(map(len, tty.split("\n")))), file=sys.stderr)
        # A wrapped evidence item goes on under its text, after "    - ".
        lines = tty.split("\n")
        i = next(k for k, ln in enumerate(lines) if ln.startswith("    - OOM at entry 500"))
        self.assertTrue(lines[i + 1].startswith("      ") and not lines[i + 1].startswith("       "), lines[i + 1])
        # A numbered fix goes on under its text, after "  1. ".
        i = next(k for k, ln in enumerate(lines) if ln.startswith("  1. "))
        self.assertTrue(lines[i + 1].startswith("     ") and lines[i + 1][5] != " ", lines[i + 1])

    def test_doctor_fits_100_columns_from_the_terminal(self):
        self.check_wrapped(DEMO, 100)

    def test_snapshot_table_rows_go_on_under_their_column(self):
        args = ["snapshot", "tests/data/snapshots/snap_train_default.pickle"]
        pipe, tty, _ = self.check_wrapped(args, 70, env_columns=70)
        lines = tty.split("\n")
        for k, ln in enumerate(lines[:-1]):
            if re.match(r"^\s+[\d.]+ [KMG]?i?B\s+[\d.]+ [KMG]?i?B\s+\d+\s+\S", ln) and lines[k + 1].startswith(" " * 30):
                # the continuation starts where the row's last field (the site) starts
                col = re.match(r"^(\s+[\d.]+ [KMG]?i?B\s+[\d.]+ [KMG]?i?B\s+\d+\s+)", ln).end()
                self.assertEqual(len(lines[k + 1]) - len(lines[k + 1].lstrip(" ")), col, lines[k:k + 2])
                break
        else:
            self.fail("no wrapped site row")

    def test_pipes_and_files_are_unchanged(self):
        for args in (DEMO, ["snapshot", "examples/snap_train_oom.pickle"]):
            self.assertEqual(piped(args), piped(args, env_columns=40))

    def test_json_is_never_wrapped(self):
        rc, out = on_pty(DEMO + ["--json"], 200, env_columns=40)
        self.assertIn(rc, (0, 1))
        doc = json.loads(out)
        self.assertEqual(doc["schema_version"], 1)

    def test_escapes_from_a_snapshot_never_reach_the_terminal(self):
        rc, out = on_pty(["snapshot", "tests/data/hostile/escape.pickle"], 100)
        self.assertEqual(rc, 0)
        self.assertNotIn("\x1b]", out)
        self.assertNotIn("\x07", out)
        self.assertNotIn("\x1b[2J", out)
        self.assertNotIn("\u009b", out)
        self.assertNotIn("\u202e", out)
        self.assertIn("\\e]0;allgood\\x07\\e[2J\\u{009b}2J", re.sub(r"\s+", "", SGR.sub("", out)))


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
