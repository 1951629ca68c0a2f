$OOMDOC triage tests/data/messages/torch_wsl_zero_free.txt # pytorch/pytorch#67971
