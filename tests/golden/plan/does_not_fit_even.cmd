$OOMDOC plan --config examples/configs/gpt2-124m.json --batch 1 --seq 1048576 --gpu t4 | tail -n 3
