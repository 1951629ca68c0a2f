$OOMDOC triage tests/data/messages/real/092_cudnn_not_init_frn.txt
