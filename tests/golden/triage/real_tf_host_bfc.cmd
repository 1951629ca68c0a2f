$OOMDOC triage tests/data/messages/tf_host_bfc.txt # tensorflow/tensorflow#11915
