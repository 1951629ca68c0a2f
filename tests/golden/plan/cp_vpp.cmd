$OOMDOC plan --config tests/data/configs/llama-2-7b.json --precision mixed-bf16 --seq 16384 --tp 4 --sp --cp 2 --pp 4 --vpp 2 --grad-accum 8 --zero 1 --dp 2 --gpu h100-sxm
