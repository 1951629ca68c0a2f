$OOMDOC triage tests/data/messages/host_dataloader_killed.txt # pytorch/pytorch#8976
