$OOMDOC triage tests/data/messages/torch_free_barely_vllm.txt # vllm-project/vllm#12529
