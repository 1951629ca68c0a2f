$OOMDOC triage tests/data/messages/host_torchrun_colossal.txt # hpcaitech/ColossalAI#3514
