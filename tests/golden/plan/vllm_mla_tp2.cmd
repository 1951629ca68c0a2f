$OOMDOC plan --config examples/configs/deepseek-v2-lite.json --engine vllm --tp 2 --max-model-len 32768 --gpu h100
