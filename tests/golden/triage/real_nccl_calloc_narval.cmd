$OOMDOC triage tests/data/messages/nccl_calloc_narval.txt # NVIDIA/nccl#1235
