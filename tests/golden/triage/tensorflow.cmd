$OOMDOC triage tests/data/messages/tensorflow.txt
