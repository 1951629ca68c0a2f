$OOMDOC plan --model tests/data/safetensors/tiny-gptq --task infer --batch 4 --prompt 128 --new-tokens 64 --gpu t4
