$OOMDOC triage tests/data/messages/nccl_enqueue_trtllm.txt # NVIDIA/TensorRT-LLM#1670
