#!/bin/sh
# compare_outputs.sh - the analyses must not change when the code gets faster: run two
# builds of oomdoc over every snapshot fixture and say whether each command's output is
# byte-identical (stdout, stderr and exit code).
#
# Usage: sh bench/compare_outputs.sh BEFORE_OOMDOC AFTER_OOMDOC
#   e.g. git stash; make; cp oomdoc /tmp/oomdoc.before; git stash pop; make
#        sh bench/compare_outputs.sh /tmp/oomdoc.before ./oomdoc
# Prints one line per difference and "N identical, N different" last; exit 1 on any
# difference.
cd "$(dirname "$0")/.." || exit 2
[ $# -eq 2 ] || { echo "usage: sh bench/compare_outputs.sh BEFORE_OOMDOC AFTER_OOMDOC" >&2; exit 2; }
before=$1
after=$2
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT

same=0
diff=0
# check NAME ARGS...: run both builds, compare what they print and their exit codes.
check() {
    name=$1
    shift
    "$before" "$@" >"$tmp/b.out" 2>"$tmp/b.err" </dev/null
    echo $? >>"$tmp/b.out"
    "$after" "$@" >"$tmp/a.out" 2>"$tmp/a.err" </dev/null
    echo $? >>"$tmp/a.out"
    if cmp -s "$tmp/b.out" "$tmp/a.out" && cmp -s "$tmp/b.err" "$tmp/a.err"; then
        same=$((same + 1))
    else
        diff=$((diff + 1))
        echo "DIFFERENT: $name: oomdoc $*"
    fi
}
# check_stdin NAME FILE ARGS...: the same with FILE on standard input (cannot be re-read).
check_stdin() {
    name=$1
    file=$2
    shift 2
    "$before" "$@" <"$file" >"$tmp/b.out" 2>"$tmp/b.err"
    echo $? >>"$tmp/b.out"
    "$after" "$@" <"$file" >"$tmp/a.out" 2>"$tmp/a.err"
    echo $? >>"$tmp/a.out"
    if cmp -s "$tmp/b.out" "$tmp/a.out" && cmp -s "$tmp/b.err" "$tmp/a.err"; then
        same=$((same + 1))
    else
        diff=$((diff + 1))
        echo "DIFFERENT: $name: oomdoc $* < $file"
    fi
}

for f in tests/data/snapshots/*.pickle* examples/*.pickle tests/data/synthetic/*.pickle \
         tests/data/extra/*.pickle tests/data/bad/*.pickle; do
    n=$(basename "$f")
    check "$n" snapshot --json "$f"
    check "$n" snapshot "$f"
    check "$n" snapshot --json --top 3 "$f"
    check "$n" replay --json "$f"
    check "$n" replay "$f"
    check "$n" replay --json --verify "$f"
    check "$n" replay --json --capacity 2GiB "$f"
    check "$n" replay --json --compare 'expandable_segments:True;max_split_size_mb:64;garbage_collection_threshold:0.6' "$f"
    check "$n" replay --json --capacity 2GiB --compare 'expandable_segments:True;max_split_size_mb:64' "$f"
    check "$n" doctor --json "$f"
    check "$n" doctor "$f"
    check "$n" doctor --json --capacity 2GiB "$f"
    check "$n" report -o /dev/stdout "$f"
    check_stdin "$n" "$f" snapshot --json -
    check_stdin "$n" "$f" replay --json -
    check_stdin "$n" "$f" doctor --json -
done
check snap_train_oom doctor --json examples/snap_train_oom.pickle examples/snap_train_oom.log
check snap_train_oom report -o /dev/stdout examples/snap_train_oom.pickle examples/snap_train_oom.log
echo "$same identical, $diff different"
[ "$diff" -eq 0 ]
