#!/bin/sh
# run.sh OOMDOC [CASE...] - golden CLI tests, one folder per command (tests/golden/doctor/,
# .../triage/; main/ for the bare program). Each case COMMAND/NAME has:
#   NAME.cmd   one shell command line; $OOMDOC is the binary under test, run from the repo root
#   NAME.out   the exact expected stdout
#   NAME.exit  the expected exit status (optional; default 0)
#   NAME.err   the exact expected stderr (optional; unchecked when absent)
# CASE selects cases by path under tests/golden, a shell pattern: doctor/frag_default,
# 'triage/real_*', doctor (a whole folder). Without one, every case runs.
# With OOMDOC_GOLDEN_UPDATE=1 a case that differs is rewritten with what the binary printed
# (its .out, its .err where it has one, its .exit): review the change with `git diff`.
# Prints one line per failure and "golden: N passed, N failed" last.
OOMDOC=${1:-./oomdoc}
[ $# -gt 0 ] && shift
case "$OOMDOC" in /*) ;; *) OOMDOC="$(pwd)/$OOMDOC" ;; esac
export OOMDOC NO_COLOR=1 LC_ALL=C
dir=$(dirname "$0")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
updated=0
[ $# -eq 0 ] && set -- '*/*'
for pat in "$@"; do
    case "$pat" in */*) ;; *) pat="$pat/*" ;; esac
    found=0
    for cmd in "$dir"/$pat.cmd; do
        [ -f "$cmd" ] || continue
        found=1
        name=${cmd%.cmd}
        case=${name#"$dir"/}
        want_exit=0
        [ -f "$name.exit" ] && want_exit=$(cat "$name.exit")
        sh -c "$(cat "$cmd")" >"$tmp/out" 2>"$tmp/err" </dev/null
        got_exit=$?
        bad=""
        [ "$got_exit" = "$want_exit" ] || bad="exit $got_exit, expected $want_exit"
        if [ -f "$name.out" ] && ! cmp -s "$tmp/out" "$name.out"; then
            bad="$bad stdout differs"
            [ -n "$OOMDOC_GOLDEN_UPDATE" ] || diff "$name.out" "$tmp/out" | head -n 20
        fi
        if [ -f "$name.err" ] && ! cmp -s "$tmp/err" "$name.err"; then
            bad="$bad stderr differs"
            [ -n "$OOMDOC_GOLDEN_UPDATE" ] || diff "$name.err" "$tmp/err" | head -n 10
        fi
        if [ -z "$bad" ]; then
            pass=$((pass + 1))
        elif [ -n "$OOMDOC_GOLDEN_UPDATE" ]; then
            cp "$tmp/out" "$name.out"
            [ -f "$name.err" ] && cp "$tmp/err" "$name.err"
            if [ "$got_exit" = 0 ]; then rm -f "$name.exit"; else echo "$got_exit" >"$name.exit"; fi
            updated=$((updated + 1))
            echo "updated $case:$bad"
        else
            fail=$((fail + 1))
            echo "FAIL $case: $bad"
        fi
    done
    [ "$found" = 1 ] || { echo "FAIL no golden case matches '$pat'"; fail=$((fail + 1)); }
done
[ -n "$OOMDOC_GOLDEN_UPDATE" ] && echo "golden: $updated updated"
echo "golden: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
