$OOMDOC triage tests/data/messages/real/105_host_dataloader_terminated_mmseg.txt
