$OOMDOC plan --config tests/data/configs/llama-3-8b.json --engine vllm --tp 16 --kv-cache-memory 20GiB --gpu h100
