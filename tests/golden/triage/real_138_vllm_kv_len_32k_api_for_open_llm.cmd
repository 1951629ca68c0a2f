$OOMDOC triage tests/data/messages/real/138_vllm_kv_len_32k_api_for_open_llm.txt
