$OOMDOC triage tests/data/messages/torch_size_bug_split_hint.txt # pytorch/pytorch#37250
