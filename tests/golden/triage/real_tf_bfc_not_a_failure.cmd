$OOMDOC triage tests/data/messages/tf_bfc_not_a_failure.txt # tensorflow/tensorflow#43546
