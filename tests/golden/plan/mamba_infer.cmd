$OOMDOC plan --config tests/data/configs/mamba-130m.json --task infer --batch 8 --prompt 2048 --new-tokens 256 --gpu t4
