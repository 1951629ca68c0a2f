$OOMDOC plan --config examples/configs/gpt2-355m.json --task infer --batch 16 --prompt 512 --new-tokens 256 --gpu l4 --json
