$OOMDOC triage tests/data/messages/vllm_v1_kv_needed.txt # vllm-project/tpu-inference#223
