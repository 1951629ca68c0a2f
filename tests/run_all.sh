#!/bin/sh
# run_all.sh BUILD_DIR [--library-only | --sanitized] - every test suite for one build;
# prints "N passed, N failed" last. Counts one per unit-test binary, golden case, fuzz
# corpus replay, cross-check and suite. --library-only (make clang-san's third build) runs
# only what reaches the library's code: unit tests, golden tests and the fuzz corpora.
# --sanitized (make asan) also leaves out the cross-checks and suites whose file says
# "run_all: release only": what does not depend on the build (the layer and man-page
# checks, the page's JavaScript), what always uses the release build (install, the Python
# package in-process), and what compares views of the same output (the page against
# doctor, the browser on the page), which a sanitizer build cannot change.
B=${1:-build/rel}
ONLY=$2
pass=0
fail=0
failed=""
ok() { pass=$((pass + 1)); }
ko() { fail=$((fail + 1)); failed="$failed $1"; }

echo "== unit tests ($B)"
for t in "$B"/tests/test_*; do
    [ -x "$t" ] || continue
    if "$t"; then ok; else ko "$(basename "$t")"; fi
done

echo "== golden CLI tests ($B)"
out=$(sh tests/golden/run.sh "$B/oomdoc" 2>&1)
status=$?
echo "$out"
line=$(echo "$out" | tail -n 1)
gp=$(echo "$line" | sed -n 's/^golden: \([0-9]*\) passed, \([0-9]*\) failed$/\1/p')
gf=$(echo "$line" | sed -n 's/^golden: \([0-9]*\) passed, \([0-9]*\) failed$/\2/p')
if [ -n "$gp" ]; then pass=$((pass + gp)); fail=$((fail + gf)); fi
{ [ "$status" -ne 0 ] || [ -z "$gp" ]; } && { [ -n "$gf" ] && [ "$gf" -gt 0 ] || ko golden-runner; }

echo "== fuzz corpus replay ($B)"
for r in "$B"/tests/fuzz_*_replay; do
    [ -x "$r" ] || continue
    name=$(basename "$r" _replay)
    corpus=tests/fuzz/corpus/${name#fuzz_}
    if "$r" "$corpus"; then ok; else ko "$name"; fi
done

[ "$ONLY" = --library-only ] && { [ -n "$failed" ] && echo "FAILED:$failed"; echo "$pass passed, $fail failed"; [ "$fail" -eq 0 ]; exit; }

echo "== cross-checks against python3 ($B)"
release_only() { [ "$ONLY" = --sanitized ] && grep -q "run_all: release only" "$1"; }

for c in tests/crosscheck/check_*.py; do
    [ -f "$c" ] || continue
    release_only "$c" && continue
    if python3 "$c" "$B/oomdoc"; then ok; else ko "$(basename "$c")"; fi
done

for s in tests/suites/*.sh; do
    [ -f "$s" ] || continue
    release_only "$s" && continue
    echo "== $(basename "$s" .sh) ($B)"
    if sh "$s" "$B/oomdoc"; then ok; else ko "$(basename "$s")"; fi
done

[ -n "$failed" ] && echo "FAILED:$failed"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
