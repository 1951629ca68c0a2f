$OOMDOC plan --config tests/data/configs/mistral-7b-v0.1.json --engine vllm --max-model-len 32768 --kv-dtype fp8 --gpu l4 --json
