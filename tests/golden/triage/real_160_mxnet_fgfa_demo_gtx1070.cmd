$OOMDOC triage tests/data/messages/real/160_mxnet_fgfa_demo_gtx1070.txt
