#!/usr/bin/env python3
"""Write the hostile inputs under tests/data/hostile/: real snapshots (tests/data/synthetic's
five_entry.pickle, a complete 5-entry trace) changed in one way an attacker or an unlucky
run would change them, each for one hole of the terminal-and-fleet issue:

  escape.pickle        frame strings that drive a terminal: an OSC title sequence and a
                       screen clear (ESC ] 0 ; ... BEL, ESC [ 2 J), a C1 CSI (U+009B), a
                       bidi override (U+202E), and a lone surrogate, which pickle writes as
                       bytes that are not UTF-8 (ED B3 BF)
  long_utf8.pickle     a frame file name of 700 two-byte characters after an odd prefix,
                       so a cut at 1 KiB lands inside a character
  badcrc.pickle.gz     five_entry.pickle gzipped with a wrong CRC-32 in the trailer
  badlen.pickle.gz     ... with a wrong ISIZE (length modulo 2^32) in the trailer
  flipped.pickle.gz    the 500-byte request made 756 (3 bytes of the pickle) under the
                       original trailer: inflates cleanly, only the CRC-32 tells

Python 3 standard library only; deterministic (gzip mtime 0). Run from the repository root:
    python3 tests/data/hostile/make_hostile.py
"""
import copy
import gzip
import os
import pickle
import struct

OUT = os.path.join("tests", "data", "hostile")
SRC = os.path.join("tests", "data", "synthetic", "five_entry.pickle")


def frames(obj, fn):
    """Call fn on every frame dict (name, filename, line) inside obj."""
    if isinstance(obj, dict):
        if "filename" in obj and "name" in obj:
            fn(obj)
        for v in obj.values():
            frames(v, fn)
    elif isinstance(obj, list):
        for v in obj:
            frames(v, fn)


def dump(name, snap):
    with open(os.path.join(OUT, name), "wb") as f:
        pickle.dump(snap, f, protocol=4)


def escape(fr):
    if fr["name"] == "main":
        fr["name"] = "main\x1b]0;all good\x07\x1b[2J\u009b2J"
        fr["filename"] = "/home/user/project/\u202etxt.niart\udcff.py"


def long_utf8(fr):
    if fr["name"] == "main":
        fr["filename"] = "/home/user/project/x" + "\u00e9" * 700 + ".py"


def main():
    raw = open(SRC, "rb").read()
    base = pickle.loads(raw)
    s = copy.deepcopy(base)
    frames(s, escape)
    dump("escape.pickle", s)
    s = copy.deepcopy(base)
    frames(s, long_utf8)
    dump("long_utf8.pickle", s)

    gz = bytearray(gzip.compress(raw, mtime=0))
    bad = bytearray(gz)
    bad[-8] ^= 0xFF  # CRC-32 (little endian), its low byte
    open(os.path.join(OUT, "badcrc.pickle.gz"), "wb").write(bad)
    bad = bytearray(gz)
    bad[-4:] = struct.pack("<I", len(raw) + 1)
    open(os.path.join(OUT, "badlen.pickle.gz"), "wb").write(bad)
    # The same pickle with the 500-byte request made 756 (every BININT2 f4 01 -> f4 02), and
    # the trailer of the original: numbers change unless the CRC is checked.
    changed = raw.replace(b"\x4d\xf4\x01", b"\x4d\xf4\x02")
    flipped = bytearray(gzip.compress(changed, mtime=0))
    flipped[-8:] = gz[-8:]
    open(os.path.join(OUT, "flipped.pickle.gz"), "wb").write(flipped)


if __name__ == "__main__":
    main()
