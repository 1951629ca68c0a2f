$OOMDOC plan --config examples/configs/gpt2-124m.json --precision fp64
