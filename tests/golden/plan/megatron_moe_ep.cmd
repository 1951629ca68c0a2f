$OOMDOC plan --config tests/data/configs/mixtral-8x7b.json --framework megatron --dp 8 --zero 1 --ep 8 --seq 4096 --checkpointing full --gpu h100 --json
