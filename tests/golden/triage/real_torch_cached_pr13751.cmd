$OOMDOC triage tests/data/messages/torch_cached_pr13751.txt # pytorch/pytorch#13751
