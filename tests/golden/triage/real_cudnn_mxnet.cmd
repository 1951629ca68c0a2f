$OOMDOC triage tests/data/messages/cudnn_mxnet.txt # ElegantGod/SSHA#5
