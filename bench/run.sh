#!/bin/sh
# run.sh - every benchmark in bench/ (bench_*.sh), each given the oomdoc binary.
status=0
for b in bench/bench_*.sh; do
    [ -f "$b" ] || continue
    sh "$b" ./oomdoc || status=1
done
exit $status
