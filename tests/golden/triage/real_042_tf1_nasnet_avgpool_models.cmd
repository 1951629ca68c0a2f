$OOMDOC triage tests/data/messages/real/042_tf1_nasnet_avgpool_models.txt
