$OOMDOC plan --config tests/data/configs/mixtral-8x7b.json --batch 1 --seq 4096 --gpu m2-ultra-192
