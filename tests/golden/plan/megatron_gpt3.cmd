$OOMDOC plan --config tests/data/configs/gpt3-175b.json --framework megatron --tp 8 --sp --pp 8 --dp 8 --zero 1 --seq 2048 --checkpointing selective --grad-accum 64 --gpu a100-80
