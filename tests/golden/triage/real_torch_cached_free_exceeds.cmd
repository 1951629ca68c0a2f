$OOMDOC triage tests/data/messages/torch_cached_free_exceeds.txt # pytorch/pytorch#16417
