$OOMDOC triage tests/data/messages/real/028_jcuda_ctxcreate_osprey.txt
