$OOMDOC triage tests/data/messages/torch_1eb_corrupt.txt # NVIDIA/nccl#1284
