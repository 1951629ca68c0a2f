"""How oomdoc's Python functions reach the C code.

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

Where the library is looked for, in order: OOMDOC_LIBRARY; next to an installed package
(`make install` records the path from the package to libdir in _installed.py); the source
tree's build/rel/ (PYTHONPATH=python); the loader's search path by soname."""
import ctypes
import os
import shutil
import subprocess
import sys
import tempfile

SONAME = "liboomdoc.so.0"  # include/oomdoc/od.h's OD_VERSION major; tests check they agree
_HERE = os.path.dirname(os.path.abspath(__file__))
_TREE = os.path.dirname(os.path.dirname(_HERE))  # python/oomdoc -> the source tree

_backend = None  # (kind, path, handle) once chosen


def _installed_dir(attr):
    try:
        from . import _installed
    except ImportError:
        return None
    rel = getattr(_installed, attr, None)
    return os.path.normpath(os.path.join(_HERE, rel)) if rel else None


def _library_candidates():
    env = os.environ.get("OOMDOC_LIBRARY")
    if env:
        return [env]
    out = []
    libdir = _installed_dir("LIBDIR")
    if libdir:
        out.append(os.path.join(libdir, SONAME))
    out.append(os.path.join(_TREE, "build", "rel", SONAME))
    out.append(SONAME)  # the dynamic loader's own search (ldconfig, LD_LIBRARY_PATH)
    return out


def _binary_candidates():
    env = os.environ.get("OOMDOC_BINARY")
    if env:
        return [env]
    out = []
    bindir = _installed_dir("BINDIR")
    if bindir:
        out.append(os.path.join(bindir, "oomdoc"))
    out.append(os.path.join(_TREE, "oomdoc"))
    found = shutil.which("oomdoc")
    if found:
        out.append(found)
    return out


def _load_library():
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
        return cand, lib, errors
    return None, None, errors


def backend():
    """('ctypes', library path) or ('exec', binary path): how calls reach oomdoc."""
    global _backend
    if _backend is None:
        want = os.environ.get("OOMDOC_BACKEND", "")
        errors = []
        if want != "exec":
            path, lib, errors = _load_library()
            if lib is not None:
                _backend = ("ctypes", path, lib)
        if _backend is None and want != "ctypes":
            for cand in _binary_candidates():
                if os.path.isfile(cand) and os.access(cand, os.X_OK):
                    _backend = ("exec", os.path.abspath(cand), None)
                    break
        if _backend is None:
            raise OSError("oomdoc: found neither %s nor an oomdoc binary (build with `make`, "
                          "install with `make install`, or set OOMDOC_LIBRARY)%s"
                          % (SONAME, ": " + "; ".join(errors) if errors else ""))
    return _backend[0], _backend[1]


def library_version():
    """od_version() of the loaded library, or the binary's --version."""
    kind, path = backend()
    if kind == "ctypes":
        return _backend[2].od_version().decode()
    r = subprocess.run([path, "--version"], capture_output=True, text=True)
    return r.stdout.split()[-1] if r.returncode == 0 else None


class _MemFiles:
    """In-memory files for data passed by value: name() returns a path the command opens."""

    def __init__(self):
        self.fds = []
        self.tmp = []

    def name(self, data, label):
        if isinstance(data, str):
            data = data.encode()
        if hasattr(os, "memfd_create"):
            fd = os.memfd_create("oomdoc-" + label, 0)  # no MFD_CLOEXEC: exec inherits it
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            self.fds.append(fd)
            return "/proc/self/fd/%d" % fd if _backend[0] == "ctypes" else "/dev/fd/%d" % fd
        # No memfd (not Linux): a private temporary file, removed right after the call.
        f = tempfile.NamedTemporaryFile(prefix="oomdoc-", delete=False)
        f.write(data)
        f.close()
        self.tmp.append(f.name)
        return f.name

    def close(self):
        for fd in self.fds:
            os.close(fd)
        for p in self.tmp:
            os.unlink(p)
        self.fds, self.tmp = [], []


def run(argv, blobs=()):
    """Run `oomdoc argv...`; blobs: (placeholder, bytes, label) whose placeholder in argv is
    replaced by an in-memory file's name. Returns (exit code, stdout bytes, stderr text,
    {file name: label})."""
    backend()
    files = _MemFiles()
    try:
        names = {}
        argv = list(argv)
        for placeholder, data, label in blobs:
            name = files.name(data, label)
            names[name] = label
            argv = [name if a is placeholder else a for a in argv]
        argv = [os.fspath(a) for a in argv]
        if _backend[0] == "ctypes":
            rc, out, err = _run_ctypes(_backend[2], argv)
        else:
            r = subprocess.run([_backend[1]] + argv, capture_output=True, pass_fds=tuple(files.fds))
            rc, out, err = r.returncode, r.stdout, r.stderr
        return rc, out, err.decode("utf-8", "replace"), names
    finally:
        files.close()


def _run_ctypes(lib, argv):
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
