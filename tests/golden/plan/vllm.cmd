$OOMDOC plan --config tests/data/configs/llama-2-7b.json --engine vllm --gpu-memory-utilization 0.9 --max-model-len 4096 --block-size 16 --gpu a100-80
