$OOMDOC plan --config tests/data/configs/llama-2-7b.json --main-grads bf16
