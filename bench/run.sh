#!/bin/sh
# run.sh - every benchmark: each bench/NAME.sh builds and runs its own program.
status=0
for b in bench/*.sh; do
    [ "$b" = bench/run.sh ] && continue
    echo "== $(basename "$b" .sh)"
    sh "$b" || status=1
done
exit $status
