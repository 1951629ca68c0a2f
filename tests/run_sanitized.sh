#!/bin/sh
# run_sanitized.sh BUILD_DIR - the suites of a sanitizer build that reach the library's
# code: unit tests, golden CLI tests and the fuzz corpora (make clang-san). The Python,
# browser and install suites add no library code to what these run and would make
# `make test` too slow for a third build; run_all.sh runs them for the other two builds.
# Prints "N passed, N failed" last.
B=${1:-build/clang}
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
echo "$out"
line=$(echo "$out" | tail -n 1)
gp=$(echo "$line" | sed -n 's/^golden: \([0-9]*\) passed, \([0-9]*\) failed$/\1/p')
gf=$(echo "$line" | sed -n 's/^golden: \([0-9]*\) passed, \([0-9]*\) failed$/\2/p')
if [ -n "$gp" ]; then pass=$((pass + gp)); fail=$((fail + gf)); else ko golden-runner; fi
[ -n "$gf" ] && [ "$gf" -gt 0 ] && failed="$failed golden"

echo "== fuzz corpus replay ($B)"
for r in "$B"/tests/fuzz_*_replay; do
    [ -x "$r" ] || continue
    name=$(basename "$r" _replay)
    if "$r" "tests/fuzz/corpus/${name#fuzz_}"; then ok; else ko "$name"; fi
done

[ -n "$failed" ] && echo "FAILED:$failed"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
