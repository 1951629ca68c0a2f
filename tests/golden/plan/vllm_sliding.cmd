$OOMDOC plan --config tests/data/configs/mistral-7b-v0.1.json --engine vllm --gpu h100
