"""`python -m oomdoc ARGS...` and the `oomdoc` console script: the oomdoc CLI itself.

The process becomes the binary (os.execv): same arguments, same terminal (watch's live
view and the progress line see a TTY), same signals and exit code. The binary is the
wheel's own (oomdoc/_native/oomdoc), else the one `make install` put in bindir, else the
source tree's ./oomdoc, else one on PATH (oomdoc._binding.binary())."""
from __future__ import annotations

import os
import sys
from typing import List, Optional

from . import _binding


def main(argv: Optional[List[str]] = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    exe = _binding.binary()
    if exe is None:
        sys.stderr.write("oomdoc: no oomdoc executable found beside the Python package (%s); "
                         "reinstall the wheel, or build one with `make` and set OOMDOC_BINARY\n"
                         % os.path.dirname(os.path.abspath(__file__)))
        return 70
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os.execv(exe, ["oomdoc"] + args)
    return 70  # not reached: execv replaces the process or raises OSError


if __name__ == "__main__":
    sys.exit(main())
