$OOMDOC triage tests/data/messages/torch_cached_fragmentation.txt # pytorch/pytorch#31252
