$OOMDOC doctor tests/data/messages/torch22_other_process.txt
