$OOMDOC plan --config tests/data/configs/llama-2-7b.json --engine vllm --gpu t4 --fail-if-not-fits
