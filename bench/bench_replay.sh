#!/bin/sh
# bench_replay.sh [OOMDOC] - build and run the allocator-model replay benchmark on the long fixture.
set -e
B=build/rel
make --no-print-directory $B/liboomdoc.a >/dev/null
mkdir -p $B/bench
cc -std=c11 -O2 -D_POSIX_C_SOURCE=200809L -Iinclude -Ilib -o $B/bench/bench_replay bench/bench_replay.c \
    $B/liboomdoc.a -ljansson -lz -lm -ldl -pthread
$B/bench/bench_replay tests/data/snapshots/snap_train_long.pickle.gz 5
