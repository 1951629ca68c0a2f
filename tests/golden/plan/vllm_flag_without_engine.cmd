$OOMDOC plan --config tests/data/configs/llama-2-7b.json --max-model-len 4096 --gpu a100-80
