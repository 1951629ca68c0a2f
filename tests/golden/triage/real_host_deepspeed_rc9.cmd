$OOMDOC triage tests/data/messages/host_deepspeed_rc9.txt # deepspeedai/DeepSpeed#3232
