#!/bin/sh
# run_all: release only (see tests/run_all.sh)
# install.sh OOMDOC - `make install` into a temporary DESTDIR, as a user would, then:
#   * every expected file is there (binary, liboomdoc.so.N with its soname, liboomdoc.a,
#     public headers only, oomdoc.pc, man pages, bash completion, the Python package);
#   * a C program built with `pkg-config --cflags --libs oomdoc` against the installed
#     headers and library prints od_version() and loads a fixture snapshot;
#   * the installed binary runs doctor on a fixture without LD_LIBRARY_PATH;
#   * the installed Python package finds the installed library and prints the verdict, and
#     `python -m oomdoc` runs the installed binary;
#   * the package goes where the python3 it serves reads it: into a venv's site-packages
#     with PREFIX=the venv (no PYTHONPATH needed), and for a PREFIX that python does not
#     read, install prints the exact PYTHONPATH= line, which works;
#   * `make uninstall` leaves no file behind (__pycache__ included).
# It uses the plain build (build/rel) whatever OOMDOC is: make's variables of an outer
# run (the sanitizer build's) are not passed down.
set -u
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
dest=$tmp/dest
fail=0
ko() { echo "FAIL install: $*"; fail=1; }
mk() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u CC -u BUILD -u OPT -u EXTRA_CFLAGS -u CFLAGS make --no-print-directory -s "$@"; }

mk install DESTDIR="$dest" PREFIX=/usr/local >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; ko "make install"; exit 1; }
p=$dest/usr/local
ver=$(sed -n 's/^#define OD_VERSION "\(.*\)"/\1/p' include/oomdoc/od.h)
major=${ver%%.*}
for f in bin/oomdoc lib/liboomdoc.so.$ver lib/liboomdoc.a lib/pkgconfig/oomdoc.pc \
         include/oomdoc/oomdoc.h include/oomdoc/od.h include/oomdoc/snapshot.h \
         share/man/man1/oomdoc.1 share/man/man1/oomdoc-doctor.1 \
         share/bash-completion/completions/oomdoc; do
    [ -f "$p/$f" ] || ko "missing $f"
done
[ "$(readlink "$p/lib/liboomdoc.so.$major")" = "liboomdoc.so.$ver" ] || ko "liboomdoc.so.$major link"
[ "$(readlink "$p/lib/liboomdoc.so")" = "liboomdoc.so.$major" ] || ko "liboomdoc.so link"
readelf -d "$p/lib/liboomdoc.so.$ver" | grep -q "SONAME.*\[liboomdoc.so.$major\]" || ko "soname"
[ -z "$(ls "$p/include/oomdoc" | grep -v -x -e oomdoc.h -e od.h -e input.h -e snapshot.h -e tracestore.h -e allocconf.h)" ] ||
    ko "internal headers installed: $(ls "$p/include/oomdoc")"
pyinit=$(find "$dest" -path '*/oomdoc/__init__.py')
[ -n "$pyinit" ] || ko "python package not installed"
pydir=$(dirname "$(dirname "$pyinit")")

# A C program against the installed library, found through pkg-config only.
cat >"$tmp/prog.c" <<'C'
#include <oomdoc/oomdoc.h>
#include <stdio.h>
#include <string.h>
int main(int argc, char **argv)
{
    printf("oomdoc %s\n", od_version());
    FILE *f = fopen(argv[1], "rb");
    od_input *in = NULL;
    od_snapshot *snap = NULL;
    od_error err;
    if (!f || od_input_open_file(f, &in, &err) != OD_OK || od_snapshot_load(in, &snap, &err) != OD_OK) {
        fprintf(stderr, "prog: %s: %s\n", argv[1], f ? err.msg : "cannot open");
        return 1;
    }
    printf("segments %zu blocks %zu torch %d\n", snap->n_segments, snap->n_blocks, snap->torch_major);
    char *args[] = {"doctor", "--json", argv[1], NULL}, *out = NULL, *errs = NULL;
    size_t out_len = 0, err_len = 0;
    int rc = od_cli_run_capture(3, args, &out, &out_len, &errs, &err_len);
    printf("doctor exit %d, %zu bytes of JSON, verdict %s\n", rc, out_len,
           out && strstr(out, "\"verdict\": \"cap_limit\"") ? "cap_limit" : "?");
    od_cli_free(out);
    od_cli_free(errs);
    od_snapshot_free(snap);
    od_input_close(in);
    fclose(f);
    return 0;
}
C
export PKG_CONFIG_PATH="$p/lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$dest"
flags=$(pkg-config --cflags --libs oomdoc) || ko "pkg-config"
echo "install: cc prog.c $flags"
cc -std=c11 -Wall -Werror -o "$tmp/prog" "$tmp/prog.c" $flags || ko "building against the install"
out=$(LD_LIBRARY_PATH="$p/lib" "$tmp/prog" examples/snap_train_oom.pickle) || ko "prog exit $?"
echo "$out"
echo "$out" | grep -q -x "oomdoc $ver" || ko "od_version"
echo "$out" | grep -q "^segments [1-9]" || ko "snapshot through the public API"
echo "$out" | grep -q "^doctor exit 0, [1-9][0-9]* bytes of JSON, verdict cap_limit$" || ko "od_cli_run_capture"
LD_LIBRARY_PATH="$p/lib" ldd "$tmp/prog" | grep -q "liboomdoc.so.$major => $p/lib/" || ko "prog not linked to the installed .so"

# The installed binary: statically linked against liboomdoc.a, so no library path needed.
ldd "$p/bin/oomdoc" | grep -q liboomdoc && ko "binary needs liboomdoc.so"
env -u LD_LIBRARY_PATH "$p/bin/oomdoc" --version | grep -q -x "oomdoc $ver" || ko "binary --version"
env -u LD_LIBRARY_PATH "$p/bin/oomdoc" doctor examples/snap_train_oom.pickle >"$tmp/doctor.txt" || ko "installed doctor exit $?"
grep -q "cap_limit" "$tmp/doctor.txt" || ko "installed doctor verdict"

# The installed Python package, outside the source tree, with nothing pointing at a build.
here=$(pwd)
v=$(cd "$tmp" && env -u OOMDOC_LIBRARY -u OOMDOC_BINARY -u OOMDOC_BACKEND -u PYTHONDONTWRITEBYTECODE PYTHONPATH="$pydir" python3 -c "
import oomdoc
kind, path = oomdoc.backend()
assert kind == 'ctypes' and path.startswith('$dest'), (kind, path)
print(oomdoc.doctor('$here/examples/snap_train_oom.pickle')['verdict'])") || ko "installed python package"
echo "install: python3 -c \"import oomdoc; print(oomdoc.doctor(...)['verdict'])\" from the install: $v"
[ "$v" = cap_limit ] || ko "installed python verdict '$v'"
[ -d "$pydir/oomdoc/__pycache__" ] || ko "expected a __pycache__ to remove"
m=$(cd "$tmp" && env -u OOMDOC_BINARY PYTHONPATH="$pydir" python3 -m oomdoc --version) || ko "python -m oomdoc exit $?"
[ "$m" = "oomdoc $ver" ] || ko "python -m oomdoc --version: '$m'"

# Where the package goes for the python3 it serves.
venv=$tmp/venv
python3 -m venv --without-pip "$venv" || ko "python3 -m venv"
mk install PREFIX="$venv" PYTHON="$venv/bin/python" >"$tmp/venv.log" 2>&1 || { cat "$tmp/venv.log"; ko "make install PREFIX=venv"; }
grep -q "does not read" "$tmp/venv.log" && ko "install into a venv printed a PYTHONPATH note: $(cat "$tmp/venv.log")"
v=$(cd "$tmp" && env -u PYTHONPATH "$venv/bin/python" -c "import oomdoc; print(oomdoc.backend()[1])") || ko "venv import"
case "$v" in "$venv"/lib/liboomdoc.so.*) ;; *) ko "venv install loads '$v'" ;; esac
mk uninstall PREFIX="$venv" PYTHON="$venv/bin/python" >/dev/null 2>&1 || ko "make uninstall PREFIX=venv"
[ -z "$(find "$venv" -name 'oomdoc*' -o -name 'liboomdoc*')" ] || ko "left in the venv: $(find "$venv" -name 'oomdoc*')"
other=$tmp/other
mk install PREFIX="$other" >"$tmp/other.log" 2>&1 || { cat "$tmp/other.log"; ko "make install PREFIX=other"; }
line=$(sed -n 's/^  \(PYTHONPATH=[^ ]*\) .*/\1/p' "$tmp/other.log")
want=$(python3 -c 'import sysconfig,sys; print(sysconfig.get_path("purelib", "posix_prefix", vars={"base": sys.argv[1], "platbase": sys.argv[1]}))' "$other")
[ "$line" = "PYTHONPATH=$want" ] || ko "install into $other: PYTHONPATH line '$line', want PYTHONPATH=$want"
v=$(cd "$tmp" && env "$line" python3 -c "import oomdoc; print(oomdoc.doctor('$here/examples/snap_train_oom.pickle')['verdict'])") ||
    ko "the printed PYTHONPATH line"
[ "$v" = cap_limit ] || ko "verdict through the printed PYTHONPATH line: '$v'"
mk uninstall PREFIX="$other" >/dev/null 2>&1 || ko "make uninstall PREFIX=other"
[ -z "$(find "$other" ! -type d)" ] || ko "left after uninstall: $(find "$other" ! -type d)"
echo "install: python3 -m venv, make install PREFIX=venv: importable without PYTHONPATH; PREFIX=other: $line"

# The installed bash completion, for `oomdoc` on PATH and for `./oomdoc` in the tree:
# every option it offers is one the subcommand accepts, --gpu and --precision values too.
comp=$p/share/bash-completion/completions/oomdoc
bad=$(PATH="$p/bin:$PATH" bash -c '
. "$1"
t() { COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]}-1)); _oomdoc; echo "${COMPREPLY[*]}"; }
for prog in oomdoc ./oomdoc; do
    cmds=$(t $prog "")
    for c in doctor triage snapshot plan replay trend diff report profile watch gpus; do
        case " $cmds " in *" $c "*) ;; *) echo "$prog: no subcommand $c"; continue ;; esac
        opts=$(t $prog $c --)
        [ -n "$opts" ] || echo "$prog $c: no options offered"
        for o in $opts; do
            v=; [ -n "$(_oomdoc_help $prog $c takes $o)" ] && v=1  # a value, so no "missing value"
            timeout 5 $prog $c $o $v </dev/null 2>&1 >/dev/null | grep -q -i -e "unknown option" -e "unrecognized option" &&
                echo "$prog $c: offers $o, which $c rejects"
        done
    done
    gpus=$(t $prog plan --gpu "")
    [ $(echo $gpus | wc -w) -ge 8 ] || echo "$prog: --gpu names: $gpus"
    for g in $gpus; do
        $prog plan --config examples/configs/llama-160m.json --gpu $g >/dev/null 2>&1 || echo "$prog: --gpu $g rejected"
    done
    [ "$(t $prog doctor --gpu h20)" = h200 ] || echo "$prog doctor --gpu h20"
    for v in $(t $prog plan --precision ""); do
        $prog plan --config examples/configs/llama-160m.json --precision $v >/dev/null 2>&1 || echo "$prog: --precision $v rejected"
    done
    pv=" $(t $prog plan --precision "") "
    for v in fp32 amp-bf16 bf16; do
        case "$pv" in *" $v "*) ;; *) echo "$prog: --precision does not offer $v";; esac
    done
done' sh "$comp" 2>&1)
[ -z "$bad" ] || ko "completion: $bad"
[ -z "$bad" ] && echo "install: completion: every offered option accepted, --gpu/--precision values accepted"

mk uninstall DESTDIR="$dest" PREFIX=/usr/local >"$tmp/uninstall.log" 2>&1 || { cat "$tmp/uninstall.log"; ko "make uninstall"; }
left=$(find "$dest" ! -type d)
[ -z "$left" ] || ko "left after uninstall: $left"
n=$(find "$dest" -type d | wc -l)
[ "$fail" = 0 ] && echo "install: installed, built against, ran, uninstalled: 0 files left ($n empty directories)"
exit $fail
