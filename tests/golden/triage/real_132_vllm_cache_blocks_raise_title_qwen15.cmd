$OOMDOC triage tests/data/messages/real/132_vllm_cache_blocks_raise_title_qwen15.txt
