$OOMDOC plan --config tests/data/configs/llama-2-7b.json --batch 4 --seq 4096 --gpu a100-80
