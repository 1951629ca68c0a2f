$OOMDOC triage tests/data/messages/vllm_cache_blocks_v1.txt # vllm-project/vllm#27508
