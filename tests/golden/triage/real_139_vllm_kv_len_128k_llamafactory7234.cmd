$OOMDOC triage tests/data/messages/real/139_vllm_kv_len_128k_llamafactory7234.txt
