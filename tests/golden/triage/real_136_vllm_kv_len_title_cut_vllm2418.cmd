$OOMDOC triage tests/data/messages/real/136_vllm_kv_len_title_cut_vllm2418.txt
