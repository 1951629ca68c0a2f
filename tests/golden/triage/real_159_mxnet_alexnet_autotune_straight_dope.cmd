$OOMDOC triage tests/data/messages/real/159_mxnet_alexnet_autotune_straight_dope.txt
