$OOMDOC doctor tests/data/messages/tensorflow.txt
