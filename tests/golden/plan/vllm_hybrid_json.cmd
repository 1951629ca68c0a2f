$OOMDOC plan --config examples/configs/gemma-2-9b.json --engine vllm --gpu h100 --json
