$OOMDOC triage tests/data/messages/real/135_vllm_kv_len_pasted_gptfuzz.txt
