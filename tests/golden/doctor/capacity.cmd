$OOMDOC doctor tests/data/messages/torch21_capacity.txt
