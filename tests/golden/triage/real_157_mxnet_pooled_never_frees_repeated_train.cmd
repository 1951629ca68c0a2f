$OOMDOC triage tests/data/messages/real/157_mxnet_pooled_never_frees_repeated_train.txt
