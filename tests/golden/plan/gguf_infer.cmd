$OOMDOC plan --model tests/data/gguf/tiny-llama.gguf --task infer --batch 4 --gpu t4
