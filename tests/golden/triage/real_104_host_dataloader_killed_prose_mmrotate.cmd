$OOMDOC triage tests/data/messages/real/104_host_dataloader_killed_prose_mmrotate.txt
