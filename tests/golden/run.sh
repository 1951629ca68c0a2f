#!/bin/sh
# run.sh OOMDOC - golden CLI tests. Each case NAME has:
#   NAME.cmd   one shell command line; $OOMDOC is the binary under test, run from the repo root
#   NAME.out   the exact expected stdout
#   NAME.exit  the expected exit status (optional; default 0)
#   NAME.err   the exact expected stderr (optional; unchecked when absent)
# Prints one line per failure and "golden: N passed, N failed" last.
OOMDOC=${1:-./oomdoc}
case "$OOMDOC" in /*) ;; *) OOMDOC="$(pwd)/$OOMDOC" ;; esac
export OOMDOC NO_COLOR=1 LC_ALL=C
dir=$(dirname "$0")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
for cmd in "$dir"/*.cmd; do
    [ -f "$cmd" ] || continue
    name=${cmd%.cmd}
    want_exit=0
    [ -f "$name.exit" ] && want_exit=$(cat "$name.exit")
    sh -c "$(cat "$cmd")" >"$tmp/out" 2>"$tmp/err" </dev/null
    got_exit=$?
    bad=""
    [ "$got_exit" = "$want_exit" ] || bad="exit $got_exit, expected $want_exit"
    if [ -f "$name.out" ] && ! cmp -s "$tmp/out" "$name.out"; then
        bad="$bad stdout differs"
        diff "$name.out" "$tmp/out" | head -n 20
    fi
    if [ -f "$name.err" ] && ! cmp -s "$tmp/err" "$name.err"; then
        bad="$bad stderr differs"
        diff "$name.err" "$tmp/err" | head -n 10
    fi
    if [ -z "$bad" ]; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "FAIL $(basename "$name"): $bad"
    fi
done
echo "golden: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
