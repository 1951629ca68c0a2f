$OOMDOC plan --config examples/configs/gpt2-124m.json --gpu h100-sxn
