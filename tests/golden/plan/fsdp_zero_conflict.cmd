$OOMDOC plan --config tests/data/configs/llama-2-7b.json --fsdp hybrid --dp 8 --zero 2 --gpu a100-80
