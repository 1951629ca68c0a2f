$OOMDOC triage tests/data/messages/vllm_kv_len_3090.txt # vllm-project/vllm#10517
