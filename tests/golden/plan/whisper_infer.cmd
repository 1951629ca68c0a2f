$OOMDOC plan --config tests/data/configs/whisper-large-v3.json --task infer --batch 16 --prompt 4 --new-tokens 440 --gpu l4
