$OOMDOC triage tests/data/messages/real/134_vllm_gpu_blocks_zero_qanything.txt
