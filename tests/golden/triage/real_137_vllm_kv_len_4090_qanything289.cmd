$OOMDOC triage tests/data/messages/real/137_vllm_kv_len_4090_qanything289.txt
