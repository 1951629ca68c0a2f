$OOMDOC plan --config tests/data/configs/mixtral-8x7b.json --ep 8
