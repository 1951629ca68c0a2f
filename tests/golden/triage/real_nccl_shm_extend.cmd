$OOMDOC triage tests/data/messages/nccl_shm_extend.txt # NVIDIA/nccl-tests#166
