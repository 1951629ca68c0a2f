$OOMDOC plan --config tests/data/configs/llama-2-7b.json --framework deepspeed --zero 2,3 --offload-optimizer none,cpu --dp 8 --seq 2048 --checkpointing full --gpu a100-80 --json
