$OOMDOC triage tests/data/messages/host_dataloader_dcpdn.txt # hezhangsprinter/DCPDN#12
