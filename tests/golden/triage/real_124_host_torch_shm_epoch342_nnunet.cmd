$OOMDOC triage tests/data/messages/real/124_host_torch_shm_epoch342_nnunet.txt
