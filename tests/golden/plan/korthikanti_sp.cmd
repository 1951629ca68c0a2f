$OOMDOC plan --config tests/data/configs/gpt2-medium-gelu.json --precision bf16 --attention eager --batch 4 --seq 1024 --tp 2 --sp --checkpointing selective --gpu a100-40
