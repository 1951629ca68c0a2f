$OOMDOC triage tests/data/messages/real/097_nccl_prose_mishandled_reconformer.txt
