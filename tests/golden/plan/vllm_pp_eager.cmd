$OOMDOC plan --config tests/data/configs/llama-2-7b.json --engine vllm --pp 3 --enforce-eager --entrypoint llm --gpu h100
