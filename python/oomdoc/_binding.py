"""How oomdoc's Python functions reach the C code: the one module that calls into it.

In-process (the default): liboomdoc.so, loaded with ctypes, exports
od_cli_run_capture(argc, argv, &out, &out_len, &err, &err_len), which runs one subcommand
in this process with its stdout and stderr captured in memory buffers. `oomdoc.doctor(...)`
is therefore `oomdoc doctor --json ...` computed by the same code, without a process or a
file. Inputs that live in memory (a snapshot dict, a text, a config dict) are written to an
anonymous in-memory file (memfd) and named to the command as /proc/self/fd/N: nothing
touches the disk, and the command's own safe pickle reader reads it.

Fallback: when the library cannot be loaded, the same argv runs through the `oomdoc`
binary (fork + exec, in-memory inputs handed over as inherited memfds). Set
OOMDOC_BACKEND=exec to choose it, OOMDOC_LIBRARY / OOMDOC_BINARY to point at a build.

Where the library is looked for, in order: OOMDOC_LIBRARY; the one a wheel bundles
(oomdoc/_native/, beside the libjansson and zlib it needs); next to a `make install`ed
package (_installed.py records the path from the package to libdir); the source tree's
build/rel/ (PYTHONPATH=python); the loader's search path by soname. The binary likewise:
OOMDOC_BINARY, the wheel's, the installed one, the tree's ./oomdoc, then PATH.

Everything the package asks of the C code goes through run_forms() and text_from_json():
when the library returns documents directly (instead of printing them), these are what
change."""
from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
import tempfile
from typing import Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

SONAME = "liboomdoc.so.0"  # include/oomdoc/od.h's OD_VERSION major; tests check they agree
_HERE = os.path.dirname(os.path.abspath(__file__))
_NATIVE = os.path.join(_HERE, "_native")  # what a wheel bundles (python/_oomdoc_build.py)
_TREE = os.path.dirname(os.path.dirname(_HERE))  # python/oomdoc -> the source tree

Arg = Union[str, "os.PathLike[str]", object]  # object: a blob's placeholder
Blob = Tuple[object, bytes, str]  # (placeholder in argv, the bytes, the label shown)

_backend: Optional[Tuple[str, str, Optional[ctypes.CDLL]]] = None  # (kind, path, handle)


class Output(NamedTuple):
    """One command's outcome: exit code, stdout bytes, stderr text (in-memory file names
    replaced by their labels, e.g. "<snapshot 1>")."""
    exit_code: int
    out: bytes
    err: str


def _installed_dir(attr: str) -> Optional[str]:
    try:
        from . import _installed  # type: ignore[attr-defined]
    except ImportError:
        return None
    rel = getattr(_installed, attr, None)
    return os.path.normpath(os.path.join(_HERE, rel)) if rel else None


def _library_candidates() -> List[str]:
    env = os.environ.get("OOMDOC_LIBRARY")
    if env:
        return [env]
    out = [os.path.join(_NATIVE, SONAME)]
    libdir = _installed_dir("LIBDIR")
    if libdir:
        out.append(os.path.join(libdir, SONAME))
    out.append(os.path.join(_TREE, "build", "rel", SONAME))
    out.append(SONAME)  # the dynamic loader's own search (ldconfig, LD_LIBRARY_PATH)
    return out


def _is_native(path: str) -> bool:
    """An executable file that is not a script: the console script `oomdoc` of a venv is a
    Python script that execs the real binary, so it must never be taken for it."""
    try:
        with open(path, "rb") as f:
            return f.read(2) != b"#!" and os.access(path, os.X_OK)
    except OSError:
        return False


def binary() -> Optional[str]:
    """The oomdoc executable this package uses (see the module's docstring), or None."""
    env = os.environ.get("OOMDOC_BINARY")
    if env:
        return os.path.abspath(env) if os.path.isfile(env) else None
    cands = [os.path.join(_NATIVE, "oomdoc")]
    bindir = _installed_dir("BINDIR")
    if bindir:
        cands.append(os.path.join(bindir, "oomdoc"))
    cands.append(os.path.join(_TREE, "oomdoc"))
    found = shutil.which("oomdoc")
    if found:
        cands.append(found)
    for c in cands:
        if os.path.isfile(c) and _is_native(c):
            return os.path.abspath(c)
    return None


class _OdError(ctypes.Structure):
    """include/oomdoc/od.h's od_error."""
    _fields_ = [("status", ctypes.c_int), ("has_offset", ctypes.c_int), ("offset", ctypes.c_uint64),
                ("msg", ctypes.c_char * 240)]


def _load_library() -> Tuple[Optional[str], Optional[ctypes.CDLL], List[str]]:
    errors = []
    for cand in _library_candidates():
        if os.sep in cand and not os.path.exists(cand):
            continue
        try:
            lib = ctypes.CDLL(cand)
        except OSError as e:
            errors.append(str(e))
            continue
        lib.od_version.restype = ctypes.c_char_p
        lib.od_version.argtypes = []
        lib.od_cli_run_capture.restype = ctypes.c_int
        lib.od_cli_run_capture.argtypes = [
            ctypes.c_int, ctypes.POINTER(ctypes.c_char_p),
            ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t),
            ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t)]
        lib.od_cli_free.restype = None
        lib.od_cli_free.argtypes = [ctypes.c_void_p]
        fn = getattr(lib, "od_diagnosis_text_json", None)  # libraries that have it
        if fn is not None:
            fn.restype = ctypes.c_int
            fn.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p),
                           ctypes.POINTER(_OdError)]
        return cand, lib, errors
    return None, None, errors


def backend() -> Tuple[str, str]:
    """('ctypes', library path) or ('exec', binary path): how calls reach oomdoc."""
    global _backend
    if _backend is None:
        want = os.environ.get("OOMDOC_BACKEND", "")
        errors: List[str] = []
        if want != "exec":
            path, lib, errors = _load_library()
            if lib is not None and path is not None:
                _backend = ("ctypes", path, lib)
        if _backend is None and want != "ctypes":
            exe = binary()
            if exe is not None:
                _backend = ("exec", exe, None)
        if _backend is None:
            raise OSError("oomdoc: found neither %s nor an oomdoc binary (pip install the "
                          "wheel, build with `make`, install with `make install`, or set "
                          "OOMDOC_LIBRARY)%s" % (SONAME, ": " + "; ".join(errors) if errors else ""))
    return _backend[0], _backend[1]


def library_version() -> Optional[str]:
    """od_version() of the loaded library, or the binary's --version."""
    kind, path = backend()
    if kind == "ctypes":
        assert _backend is not None and _backend[2] is not None
        return _backend[2].od_version().decode()
    r = subprocess.run([path, "--version"], capture_output=True, text=True)
    return r.stdout.split()[-1] if r.returncode == 0 else None


class _MemFiles:
    """In-memory files for data passed by value: name() returns a path the command opens."""

    def __init__(self) -> None:
        self.fds: List[int] = []
        self.tmp: List[str] = []

    def name(self, data: bytes, label: str) -> str:
        if hasattr(os, "memfd_create"):
            fd = os.memfd_create("oomdoc-" + label, 0)  # no MFD_CLOEXEC: exec inherits it
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            self.fds.append(fd)
            assert _backend is not None
            return "/proc/self/fd/%d" % fd if _backend[0] == "ctypes" else "/dev/fd/%d" % fd
        # No memfd (not Linux): a private temporary file, removed right after the call.
        f = tempfile.NamedTemporaryFile(prefix="oomdoc-", delete=False)
        f.write(data)
        f.close()
        self.tmp.append(f.name)
        return f.name

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)
        for p in self.tmp:
            os.unlink(p)
        self.fds, self.tmp = [], []


def _relabel(s: str, names: Mapping[str, str]) -> str:
    for name, label in names.items():
        s = s.replace(name, label)
    return s


def _argv_text(a: object) -> str:
    s = os.fspath(a) if isinstance(a, os.PathLike) else a
    if not isinstance(s, str):
        raise TypeError("oomdoc: an argument must be a str or a path, not %s" % type(s).__name__)
    if "\0" in s:
        # C reads an argument up to its first NUL: "a.pickle\0x" would open a.pickle.
        raise ValueError("oomdoc: %r contains a NUL byte, which no file name or option can hold" % s)
    return s


class Runs(Dict[str, Output]):
    """run_forms()'s answer: {form: Output}, and names: {in-memory file name: its label}."""

    def __init__(self, outputs: Mapping[str, Output], names: Mapping[str, str]) -> None:
        super().__init__(outputs)
        self.names = dict(names)


def run_forms(forms: Mapping[str, Sequence[Arg]], blobs: Sequence[Blob] = ()) -> Runs:
    """Run `oomdoc ARGV...` for each form (e.g. {"json": [...], "text": [...]}) over the
    same in-memory inputs: each blob's placeholder in an argv is replaced by the name of
    an in-memory file holding its bytes, written once for all the forms. stderr comes
    back with those names replaced by the blobs' labels; stdout is left as bytes, and
    Runs.names says what to replace in it once decoded."""
    backend()
    files = _MemFiles()
    try:
        names: Dict[str, str] = {}
        placed: Dict[int, str] = {}
        for placeholder, data, label in blobs:
            name = files.name(data, label)
            names[name] = label
            placed[id(placeholder)] = name
        outputs = {}
        for form, argv in forms.items():
            args = [placed[id(a)] if id(a) in placed else _argv_text(a) for a in argv]
            rc, out, err = _run_one(args, files)
            outputs[form] = Output(rc, out, _relabel(err, names))
        return Runs(outputs, names)
    finally:
        files.close()


def _run_one(argv: List[str], files: _MemFiles) -> Tuple[int, bytes, str]:
    assert _backend is not None
    if _backend[0] == "ctypes":
        assert _backend[2] is not None
        rc, out, err = _run_ctypes(_backend[2], argv)
    else:
        r = subprocess.run([_backend[1]] + argv, capture_output=True, pass_fds=tuple(files.fds))
        rc, out, err = r.returncode, r.stdout, r.stderr
    return rc, out, err.decode("utf-8", "replace")


def _run_ctypes(lib: ctypes.CDLL, argv: List[str]) -> Tuple[int, bytes, bytes]:
    enc = [a.encode(sys.getfilesystemencoding(), "surrogateescape") for a in argv]
    arr = (ctypes.c_char_p * (len(enc) + 1))(*enc, None)
    out, err = ctypes.c_void_p(), ctypes.c_void_p()
    out_len, err_len = ctypes.c_size_t(), ctypes.c_size_t()
    rc = lib.od_cli_run_capture(len(enc), arr, ctypes.byref(out), ctypes.byref(out_len),
                                ctypes.byref(err), ctypes.byref(err_len))
    try:
        o = ctypes.string_at(out.value, out_len.value) if out.value else b""
        e = ctypes.string_at(err.value, err_len.value) if err.value else b""
    finally:
        lib.od_cli_free(out)
        lib.od_cli_free(err)
    return rc, o, e


def text_from_json(command: str, doc: bytes) -> Optional[str]:
    """The text `oomdoc COMMAND` prints, made from its --json document without running it
    again, where the library can (od_diagnosis_text_json: doctor); else None."""
    if command != "doctor":
        return None
    backend()
    assert _backend is not None
    lib = _backend[2]
    fn = getattr(lib, "od_diagnosis_text_json", None) if lib is not None else None
    if fn is None:
        return None
    text, err = ctypes.c_void_p(), _OdError()
    if fn(doc, len(doc), ctypes.byref(text), ctypes.byref(err)) != 0:
        return None
    try:
        return ctypes.string_at(text.value).decode("utf-8", "replace") if text.value else ""
    finally:
        lib.od_cli_free(text)


def run(argv: Sequence[Arg], blobs: Sequence[Blob] = ()) -> Tuple[int, bytes, str, Dict[str, str]]:
    """One command: (exit code, stdout bytes, stderr text, {in-memory file: label})."""
    runs = run_forms({"run": argv}, blobs)
    o = runs["run"]
    return o.exit_code, o.out, o.err, runs.names
