$OOMDOC triage tests/data/messages/tf_bfc_rounded.txt # tensorflow/tensorflow#36751
