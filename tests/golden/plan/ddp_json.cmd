$OOMDOC plan --config tests/data/configs/llama-2-7b.json --seq 2048 --checkpointing full --framework ddp --dp 8 --gpu a100-80 --json
