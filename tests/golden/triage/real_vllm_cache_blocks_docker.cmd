$OOMDOC triage tests/data/messages/vllm_cache_blocks_docker.txt # vllm-project/vllm#10439
