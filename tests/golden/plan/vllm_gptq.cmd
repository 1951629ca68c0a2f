$OOMDOC plan --config tests/data/configs/llama-2-7b.json --engine vllm --weights gptq-int4 --gpu a100-80
