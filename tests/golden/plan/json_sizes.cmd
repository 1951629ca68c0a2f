$OOMDOC plan --layers 32 --hidden 4096 --params 6738415616 --batch 2 --seq 4096 --checkpointing full --gpu a100-80 --json
