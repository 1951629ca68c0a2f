$OOMDOC plan --config tests/data/configs/llama-2-7b.json --seq 4096 --cp 2 --attention eager
