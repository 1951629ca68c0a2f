$OOMDOC plan --config tests/data/configs/llama-2-7b.json --base-weights nf4 --gpu a100-80
