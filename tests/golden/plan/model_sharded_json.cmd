$OOMDOC plan --model tests/data/safetensors/tiny-llama-sharded --json --gpu l4
