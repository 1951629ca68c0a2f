#!/bin/sh
# wheel.sh OOMDOC - the Python wheel as a user gets it, with Debian's python3 and its
# python3-venv, python3-pip, python3-setuptools and python3-wheel (tools/deps.sh test):
#   * a fresh copy of the tree (what git tracks, and new files it does not ignore; no
#     build/) builds a wheel with `python3 -m pip wheel --no-build-isolation --no-deps .`
#     (PyPI is never asked: nothing else to fetch);
#   * the wheel holds the package, py.typed, and in oomdoc/_native/ liboomdoc.so.0, the
#     oomdoc binary and the libjansson and libz they link, with their licences; it is a
#     platform wheel (py3-none-<platform>), and its library exports only the public API;
#   * installed into a fresh venv (pip --no-index), used from a directory outside the tree
#     with nothing pointing at a build: the `oomdoc` console script and `python -m oomdoc`
#     are the CLI (its version; doctor on the bundled example; a terminal's colours, so a
#     TTY reaches it), `import oomdoc` loads the bundled library, one version everywhere
#     (importlib.metadata, oomdoc.__version__, od_version(), --version);
#   * ldd: the library and the binary need nothing beyond glibc that the wheel does not
#     carry; pip uninstall removes every file.
# The file list, the wheel's size and the export count are printed (the evidence).
set -u
dir=$(dirname "$1")
case "$dir" in
    . | build/rel | */build/rel) ;;
    *) echo "wheel: the wheel builds its own native files whatever OOMDOC is: run with the release build only"; exit 0 ;;
esac
py=/usr/bin/python3
if ! "$py" -c 'import setuptools, wheel, pip, venv, ensurepip' >/dev/null 2>&1; then
    echo "wheel: $py lacks pip, setuptools, wheel or venv (apt-get install python3-pip python3-setuptools python3-wheel python3-venv)"
    [ "${OOMDOC_REQUIRE_WHEEL:-0}" = 1 ] && exit 1
    exit 0
fi
here=$(pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
ko() { echo "FAIL wheel: $*"; fail=1; }
ver=$(sed -n 's/^#define OD_VERSION "\(.*\)"/\1/p' include/oomdoc/od.h)

# A fresh tree: what a clone of the current work holds.
mkdir -p "$tmp/src"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files -z -c -o --exclude-standard | xargs -0 sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh |
        tar --null -T - -cf - | tar -xf - -C "$tmp/src"
else
    tar --exclude=./build --exclude=./oomdoc -cf - . | tar -xf - -C "$tmp/src"
fi
[ -e "$tmp/src/build" ] && ko "the fresh tree has a build/"
files() { (cd "$tmp/src" && find . -path ./build -prune -o -type f -print | sort); }
files >"$tmp/before"
start=$(date +%s)
(cd "$tmp/src" && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u CC -u BUILD -u OPT -u EXTRA_CFLAGS -u CFLAGS \
    "$py" -m pip wheel --no-build-isolation --no-deps --no-index -w "$tmp/dist" .) >"$tmp/build.log" 2>&1 ||
    { tail -30 "$tmp/build.log"; ko "pip wheel"; exit 1; }
whl=$(ls "$tmp"/dist/oomdoc-*.whl 2>/dev/null)
[ -n "$whl" ] || { ko "no wheel built"; exit 1; }
echo "wheel: built $(basename "$whl") from a fresh tree in $(( $(date +%s) - start )) s, $(wc -c <"$whl") bytes"
case "$(basename "$whl")" in "oomdoc-$ver-py3-none-linux_"*.whl) ;; *) ko "wheel name/tag $(basename "$whl")" ;; esac
files | cmp -s - "$tmp/before" || ko "the build left files outside build/: $(files | comm -13 "$tmp/before" -)"

"$py" - "$whl" >"$tmp/list" <<'PY' || ko "wheel contents"
import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
names = z.namelist()
for i in z.infolist():
    print("%9d  %s%s" % (i.file_size, i.filename, "  (executable)" if (i.external_attr >> 16) & 0o111 else ""))
need = ["oomdoc/__init__.py", "oomdoc/__main__.py", "oomdoc/_binding.py", "oomdoc/api.py",
        "oomdoc/capture.py", "oomdoc/integrations.py", "oomdoc/py.typed",
        "oomdoc/_native/liboomdoc.so.0", "oomdoc/_native/oomdoc", "oomdoc/_native/libjansson.so.4",
        "oomdoc/_native/libz.so.1", "oomdoc/_native/libjansson.copyright", "oomdoc/_native/libz.copyright"]
missing = [n for n in need if n not in names]
extra = [n for n in names if not n.startswith("oomdoc-") and n not in need]
for n in ("oomdoc/_native/oomdoc", "oomdoc/_native/liboomdoc.so.0"):
    if n in names and not (z.getinfo(n).external_attr >> 16) & 0o111:
        missing.append(n + " (not executable)")
if missing or extra:
    sys.exit("missing %s; unexpected %s" % (missing, extra))
PY
cat "$tmp/list"

"$py" -m venv "$tmp/venv" || { ko "python3 -m venv"; exit 1; }
"$tmp/venv/bin/pip" install --no-index --no-deps "$whl" >"$tmp/pip.log" 2>&1 || { cat "$tmp/pip.log"; ko "pip install"; exit 1; }
site=$("$tmp/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_path("platlib"))')
native=$site/oomdoc/_native
sh tests/suites/exports.sh "$native/oomdoc" "$native/liboomdoc.so.0" || ko "the wheel's library exports"

# ldd: beyond glibc (libc, libm, the loader, the vDSO), only what the wheel carries.
for f in "$native/liboomdoc.so.0" "$native/oomdoc"; do
    bad=$(ldd "$f" | grep -v -e linux-vdso -e 'ld-linux' -e 'libc\.so\.6 ' -e 'libm\.so\.6 ' -e "=> $native/")
    [ -z "$bad" ] || ko "$(basename "$f") needs what the wheel does not carry: $bad"
done
echo "wheel: ldd $(basename "$native")/liboomdoc.so.0:"; ldd "$native/liboomdoc.so.0" | sed 's/ (0x[0-9a-f]*)//'

# Used from elsewhere, with nothing pointing at a build or the tree.
mkdir -p "$tmp/elsewhere"
cd "$tmp/elsewhere" || exit 1
clean() { env -u PYTHONPATH -u OOMDOC_LIBRARY -u OOMDOC_BINARY -u OOMDOC_BACKEND -u LD_LIBRARY_PATH "$@"; }
v=$(clean "$tmp/venv/bin/oomdoc" --version) || ko "oomdoc --version exit $?"
echo "wheel: \$ oomdoc --version (the venv's console script)"; echo "$v"
[ "$v" = "oomdoc $ver" ] || ko "oomdoc --version: '$v'"
[ "$(clean "$tmp/venv/bin/python" -m oomdoc --version)" = "oomdoc $ver" ] || ko "python -m oomdoc --version"
clean "$tmp/venv/bin/python" -m oomdoc doctor "$here/examples/snap_train_oom.pickle" "$here/examples/snap_train_oom.log" \
    >"$tmp/doctor.txt" 2>&1 || ko "python -m oomdoc doctor exit $?"
echo "wheel: \$ python -m oomdoc doctor examples/snap_train_oom.pickle examples/snap_train_oom.log (first lines)"
head -n 4 "$tmp/doctor.txt"
grep -q "^verdict: cap_limit" "$tmp/doctor.txt" || ko "python -m oomdoc doctor verdict"
clean "$tmp/venv/bin/oomdoc" doctor "$here/examples/snap_train_oom.pickle" "$here/examples/snap_train_oom.log" 2>&1 |
    cmp -s - "$tmp/doctor.txt" ||
    ko "the console script and python -m oomdoc differ"
# A terminal reaches the CLI: on a pseudo-terminal it colours its output, as the binary does.
if command -v script >/dev/null 2>&1; then
    tty=$(clean script -qec "$tmp/venv/bin/oomdoc doctor $here/examples/snap_train_oom.pickle" /dev/null | head -n 3)
    printf '%s' "$tty" | grep -q "$(printf '\033')\[" || ko "no colour on a terminal: the console script lost the TTY"
fi
out=$(clean "$tmp/venv/bin/python" -c "
import importlib.metadata as md, os, oomdoc
kind, path = oomdoc.backend()
print(md.version('oomdoc'), oomdoc.__version__, oomdoc.library_version(), kind, os.path.relpath(path, '$site'))
print(oomdoc.doctor('$here/examples/snap_train_oom.pickle')['verdict'])
print(oomdoc._binding.binary() == os.path.join('$native', 'oomdoc'))") || ko "import oomdoc in the venv"
[ "$(echo "$out" | sed -n 1p)" = "$ver $ver $ver ctypes oomdoc/_native/liboomdoc.so.0" ] ||
    ko "versions and library: $(echo "$out" | sed -n 1p)"
[ "$(echo "$out" | sed -n 2,3p | tr '\n' ' ')" = "cap_limit True " ] || ko "doctor / binary in the venv: $out"
echo "wheel: importlib.metadata, oomdoc.__version__, od_version(), backend: $(echo "$out" | sed -n 1p)"

cd "$here" || exit 1
"$tmp/venv/bin/pip" uninstall -y oomdoc >/dev/null 2>&1 || ko "pip uninstall"
[ -z "$(ls "$site" | grep -i oomdoc)" ] || ko "left after pip uninstall: $(ls "$site" | grep -i oomdoc)"
[ -e "$tmp/venv/bin/oomdoc" ] && ko "console script left after pip uninstall"
[ "$fail" = 0 ] && echo "wheel: built from a fresh tree, installed in a venv, ran outside the tree, uninstalled"
exit $fail
