$OOMDOC triage tests/data/messages/vllm_kv_len_deepseek.txt # deepseek-ai/DeepSeek-V2#83
