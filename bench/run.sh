#!/bin/sh
# run.sh - every benchmark in bench/ (bench_*.py with python3, bench_*.sh with sh), each
# printing its figures next to the baseline it names, measured in the same run.
cd "$(dirname "$0")/.." || exit 1
status=0
for b in bench/bench_*; do
    case "$b" in
    *.py) python3 "$b" ./oomdoc || status=1 ;;
    *.sh) sh "$b" ./oomdoc || status=1 ;;
    esac
done
exit $status
