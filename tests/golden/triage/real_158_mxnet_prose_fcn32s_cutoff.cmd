$OOMDOC triage tests/data/messages/real/158_mxnet_prose_fcn32s_cutoff.txt
