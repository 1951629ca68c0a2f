$OOMDOC plan --config tests/data/configs/llama-2-7b.json --framework megatron --pp 4 --first-stage-layers 6 --last-stage-layers 10 --grad-accum 8 --seq 4096 --stage first --gpu h100
