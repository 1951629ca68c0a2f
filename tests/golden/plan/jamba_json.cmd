$OOMDOC plan --config tests/data/configs/jamba-1.5-mini.json --task infer --batch 1 --prompt 65536 --new-tokens 64 --gpu h200 --json
