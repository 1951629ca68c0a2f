$OOMDOC triage tests/data/messages/real/133_vllm_cache_blocks_enforce_eager_bonito.txt
