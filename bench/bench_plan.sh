#!/bin/sh
# bench_plan.sh [OOMDOC] - `oomdoc plan` must answer in under 50 ms for one config,
# max-batch search and recipes included (a recipe search estimates thousands of combinations). Compared in the same run with the named
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
llama=tests/data/configs/llama-2-7b.json
t_recipe=$(run recipe "$OOMDOC" plan --config "$llama" --batch 4 --seq 4096 --gpu a100-80 --json)
t_table=$(run table "$OOMDOC" plan --config "$llama" --task infer --weights bf16,int8,int4 --gpu l4,a100-80 --json)
t_vllm=$(run vllm "$OOMDOC" plan --config "$llama" --engine vllm --gpu h100 --json)
fmt() { awk -v us="$1" 'BEGIN { if (us < 0) us = 0; printf "%.2f ms", us / 1000 }'; }
echo "bench_plan: mean wall time per call over $N calls (budget 50 ms)"
echo "  baseline startup (plan --help):                $(fmt "$base")"
echo "  plan llama-160m train, h200 (fits):            $(fmt "$t_train")  (+$(fmt $((t_train - base))) over startup)"
echo "  plan mixtral-8x7b train, rtx4090 (no fit):     $(fmt "$t_big")  (+$(fmt $((t_big - base))) over startup)"
echo "  plan llama-160m generate, l4:                  $(fmt "$t_infer")  (+$(fmt $((t_infer - base))) over startup)"
echo "  plan llama-2-7b 4x4096 a100-80 (recipes):      $(fmt "$t_recipe")  (+$(fmt $((t_recipe - base))) over startup)"
echo "  plan llama-2-7b table, 3 weights x 2 GPUs:     $(fmt "$t_table")  (+$(fmt $((t_table - base))) over startup)"
echo "  plan llama-2-7b --engine vllm, h100:           $(fmt "$t_vllm")  (+$(fmt $((t_vllm - base))) over startup)"
worst=$t_train
for t in $t_big $t_infer $t_recipe $t_table $t_vllm; do [ "$t" -gt "$worst" ] && worst=$t; done
if [ "$worst" -lt 50000 ]; then echo "  PASS: slowest $(fmt "$worst") < 50 ms"; else echo "  FAIL: slowest $(fmt "$worst") >= 50 ms"; exit 1; fi
