$OOMDOC triage tests/data/messages/torch_rank_contexts_full.txt # OEvortex/unsloth#21
