$OOMDOC triage tests/data/messages/torch_reserved_wrong_gpu.txt # hiyouga/LlamaFactory#182
