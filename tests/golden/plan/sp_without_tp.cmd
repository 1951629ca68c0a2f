$OOMDOC plan --config examples/configs/gpt2-355m.json --sp --gpu a100-40
