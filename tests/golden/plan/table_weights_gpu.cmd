$OOMDOC plan --config tests/data/configs/llama-2-7b.json --task infer --weights bf16,int8,int4 --gpu l4,a100-80
