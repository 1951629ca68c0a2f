$OOMDOC triage tests/data/messages/real/044_tf1_mid_training_inception.txt
