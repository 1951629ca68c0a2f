#!/bin/sh
# bench_plan.sh [OOMDOC] - `oomdoc plan` must answer in under 50 ms for one config,
# max-batch search and mitigations included. Compared in the same run with the named
# baseline "startup": the same binary printing `plan --help` (process start, no work).
OOMDOC=${1:-./oomdoc}
N=${N:-200}
now_ns() { date +%s%N; }
run() { # label, then the command; prints mean ms per call
    label=$1; shift
    "$@" >/dev/null 2>&1  # warm the page cache
    t0=$(now_ns)
    i=0
    while [ $i -lt "$N" ]; do "$@" >/dev/null 2>&1; i=$((i + 1)); done
    t1=$(now_ns)
    echo $(( (t1 - t0) / N / 1000 ))
}
cfg=examples/configs/llama-160m.json
moe=tests/data/configs/mixtral-8x7b.json
base=$(run startup "$OOMDOC" plan --help)
t_train=$(run train "$OOMDOC" plan --config "$cfg" --batch 8 --seq 2048 --gpu h200 --json)
t_big=$(run train-oom "$OOMDOC" plan --config "$moe" --batch 4 --seq 4096 --gpu rtx4090 --json)
t_infer=$(run infer "$OOMDOC" plan --config "$cfg" --task infer --batch 64 --prompt 1024 --new-tokens 128 --kv-cache dynamic --gpu l4 --json)
fmt() { awk -v us="$1" 'BEGIN { if (us < 0) us = 0; printf "%.2f ms", us / 1000 }'; }
echo "bench_plan: mean wall time per call over $N calls (budget 50 ms)"
echo "  baseline startup (plan --help):                $(fmt "$base")"
echo "  plan llama-160m train, h200 (fits):            $(fmt "$t_train")  (+$(fmt $((t_train - base))) over startup)"
echo "  plan mixtral-8x7b train, rtx4090 (no fit):     $(fmt "$t_big")  (+$(fmt $((t_big - base))) over startup)"
echo "  plan llama-160m generate, l4:                  $(fmt "$t_infer")  (+$(fmt $((t_infer - base))) over startup)"
worst=$t_train
[ "$t_big" -gt "$worst" ] && worst=$t_big
[ "$t_infer" -gt "$worst" ] && worst=$t_infer
if [ "$worst" -lt 50000 ]; then echo "  PASS: slowest $(fmt "$worst") < 50 ms"; else echo "  FAIL: slowest $(fmt "$worst") >= 50 ms"; exit 1; fi
