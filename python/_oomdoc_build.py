"""Build helpers for the Python package (not part of it; no file of the wheel imports this).

As setuptools commands, named in pyproject.toml's [tool.setuptools.cmdclass]:
  build_py     the package's .py files, then `make python-native BUNDLED=1` (the library
               and the CLI, compiled once, PIC, each looking beside itself first for the
               libraries it links), and into oomdoc/_native/: liboomdoc.so.0, the oomdoc
               binary, the libjansson.so.4 and libz.so.1 they were linked against (with
               their licences), stripped. The wheel then runs where only glibc is present.
  bdist_wheel  a platform wheel (py3-none-<platform>): native code, but no Python ABI
               (ctypes), so one wheel serves every Python 3.
  egg_info     its metadata under build/, not in the source tree.
VERSION is include/oomdoc/od.h's OD_VERSION, which [project] reads (dynamic version): one
version for the wheel's metadata, `oomdoc --version` and od_version().

As a script, for the Makefile's install rules:
  python3 python/_oomdoc_build.py pythondir PREFIX
      where `make install` puts the package for this python: its site directory that
      lies under PREFIX (purelib first), else PREFIX/lib/pythonX.Y/site-packages
  python3 python/_oomdoc_build.py pythonpath-note DIR
      prints the PYTHONPATH= line to use when this python does not read DIR"""
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _read_version():
    with open(os.path.join(ROOT, "include", "oomdoc", "od.h")) as f:
        m = re.search(r'^#define OD_VERSION "([^"]+)"', f.read(), re.M)
    if not m:
        raise RuntimeError("include/oomdoc/od.h defines no OD_VERSION")
    return m.group(1)


VERSION = _read_version()
SONAME = "liboomdoc.so.%s" % VERSION.split(".")[0]
BUILD = "build/wheel"  # the Makefile's BUILD for the wheel's native files
CARRIED = {  # soname prefix -> where the licence of the library of that name is
    "libjansson.so": "/usr/share/doc/libjansson4/copyright",
    "libz.so": "/usr/share/doc/zlib1g/copyright",
}


# ---------------------------------------------------------------------------------------
# make install

def _under(path, prefix):
    path, prefix = os.path.realpath(path), os.path.realpath(prefix)
    return path == prefix or path.startswith(prefix.rstrip(os.sep) + os.sep)


def _site_dirs():
    import site
    import sysconfig
    dirs = [sysconfig.get_path("purelib")]
    try:
        dirs += site.getsitepackages()
    except AttributeError:  # old virtualenvs' site.py
        pass
    if site.ENABLE_USER_SITE:
        dirs.append(site.getusersitepackages())
    return dirs


def pythondir(prefix):
    for d in _site_dirs():
        if _under(d, prefix):
            return d
    import sysconfig
    return sysconfig.get_path("purelib", "posix_prefix", vars={"base": prefix, "platbase": prefix})


def pythonpath_note(directory):
    if any(os.path.realpath(p) == os.path.realpath(directory) for p in sys.path if p):
        return ""
    return ("make install: %s does not read %s; use the package with\n"
            "  PYTHONPATH=%s %s -c 'import oomdoc'\n"
            "(or install into this python's own prefix: make install PREFIX=%s)\n"
            % (sys.executable, directory, directory, os.path.basename(sys.executable), sys.prefix))


# ---------------------------------------------------------------------------------------
# setuptools commands (imported only by setuptools, which is then importable)

def _linked_libraries(path):
    """{soname: resolved path} of what the loader resolves path's dependencies to."""
    out = subprocess.run(["ldd", path], capture_output=True, text=True, check=True).stdout
    libs = {}
    for line in out.splitlines():
        m = re.match(r"\s*(\S+) => (\S+) \(", line)
        if m:
            libs[m.group(1)] = m.group(2)
    return libs


def build_native(dest):
    """`make python-native`, then the wheel's oomdoc/_native/ files into dest."""
    jobs = os.environ.get("OOMDOC_BUILD_JOBS") or str(os.cpu_count() or 1)
    cmd = ["make", "-C", ROOT, "-j" + jobs, "--no-print-directory", "python-native",
           "BUILD=" + BUILD, "BUNDLED=1"]
    print(" ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)
    built = os.path.join(ROOT, BUILD)
    os.makedirs(dest, exist_ok=True)
    lib = os.path.join(dest, SONAME)
    shutil.copyfile(os.path.join(built, "liboomdoc.so.%s" % VERSION), lib)
    exe = os.path.join(dest, "oomdoc")
    shutil.copyfile(os.path.join(built, "pic", "oomdoc"), exe)
    carried = []
    for soname, path in _linked_libraries(os.path.join(built, "liboomdoc.so.%s" % VERSION)).items():
        for prefix, licence in CARRIED.items():
            if soname.startswith(prefix):
                shutil.copyfile(path, os.path.join(dest, soname))
                carried.append(os.path.join(dest, soname))
                if os.path.exists(licence):
                    shutil.copyfile(licence, os.path.join(dest, soname.split(".so")[0] + ".copyright"))
                else:
                    print("warning: no licence file %s to carry beside %s" % (licence, soname), flush=True)
    missing = set(CARRIED) - {os.path.basename(p).split(".so")[0] + ".so" for p in carried}
    if missing:
        raise RuntimeError("the library does not link %s: cannot carry it" % ", ".join(sorted(missing)))
    strip = shutil.which("strip")
    for path in [lib, exe] + carried:
        if strip:
            subprocess.run([strip, "--strip-unneeded", path], check=True)
        os.chmod(path, 0o755)


if __name__ != "__main__":  # loaded by setuptools (as a script, make install needs none of it)
    from setuptools.command.build_py import build_py as _build_py
    from setuptools.command.egg_info import egg_info as _egg_info

    class BuildPy(_build_py):
        def run(self):
            super().run()
            if not self.dry_run:
                build_native(os.path.join(self.build_lib, "oomdoc", "_native"))

    class EggInfo(_egg_info):
        def initialize_options(self):
            super().initialize_options()
            self.egg_base = os.path.join(ROOT, "build")
            os.makedirs(self.egg_base, exist_ok=True)

    try:
        from wheel.bdist_wheel import bdist_wheel as _bdist_wheel
    except ImportError:  # setuptools 70.1+ carries its own
        from setuptools.command.bdist_wheel import bdist_wheel as _bdist_wheel

    class BdistWheel(_bdist_wheel):
        def finalize_options(self):
            # Native files: a platform wheel, installed as platlib (at the wheel's root).
            self.distribution.has_ext_modules = lambda: True
            super().finalize_options()

        def get_tag(self):
            return "py3", "none", super().get_tag()[2]


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "pythondir":
        print(pythondir(sys.argv[2]))
    elif len(sys.argv) == 3 and sys.argv[1] == "pythonpath-note":
        sys.stdout.write(pythonpath_note(sys.argv[2]))
    else:
        sys.exit("usage: %s pythondir PREFIX | pythonpath-note DIR" % sys.argv[0])
