#!/bin/sh
# run_all: release only (see tests/run_all.sh)
# readme_examples.sh OOMDOC - every shell example of README.md (each line of its ```sh
# blocks, continuation lines joined) runs from the clone's root with OOMDOC as `oomdoc` on
# PATH and must exit 0 or 1 (4 for watch/gpus where NVML is absent). Not run here, and why:
# `make test` (the suite this test belongs to) and the install line (`make install`,
# tests/suites/install.sh installs into a temporary DESTDIR and runs the result).
# Files the examples write into the root (report.html, run.csv, ...) are removed after:
# only new top-level files that the README itself names.
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
ln -s "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")" "$bin/oomdoc"
before=$(ls -A)
# The build the examples use for `PYTHONPATH=python`: the plain one's library, if built.
awk '/^```sh$/{on=1; next} /^```$/{on=0} on' README.md | awk '
    { line = (cont ? cont " " : "") $0 }
    /\\$/ { sub(/\\$/, "", line); cont = line; next }
    { cont = ""; print line }' >"$bin/examples"
n=0
fail=0
skipped=0
while IFS= read -r cmd; do
    case "$cmd" in
    ""|"#"*) continue ;;
    "make test"*|"make && sudo make install"*|*"make install"*) skipped=$((skipped + 1)); continue ;;
    esac
    n=$((n + 1))
    env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL PATH="$bin:$PATH" OOMDOC_BINARY="$bin/oomdoc" \
        sh -c "$cmd" >"$bin/out" 2>&1 </dev/null
    rc=$?
    ok=0
    case $rc in
    0|1) ok=1 ;;
    4) case "$cmd" in *"oomdoc watch"*|*"oomdoc gpus"*) grep -q NVML "$bin/out" && ok=1 ;; esac ;;
    esac
    if [ $ok = 1 ]; then
        echo "ok   (exit $rc) $cmd"
    else
        fail=$((fail + 1))
        echo "FAIL (exit $rc) $cmd"
        tail -n 5 "$bin/out" | sed 's/^/     /'
    fi
done <"$bin/examples"
for f in $(ls -A); do
    echo "$before" | grep -q -x -F "$f" && continue
    grep -q -F "$f" README.md && [ -f "$f" ] && rm -f "$f"
done
echo "readme_examples: $((n - fail)) passed, $fail failed ($skipped not run: make test, install)"
[ $fail = 0 ]
