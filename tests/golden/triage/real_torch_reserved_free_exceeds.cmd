$OOMDOC triage tests/data/messages/torch_reserved_free_exceeds.txt # pytorch/pytorch#59778
