$OOMDOC triage tests/data/messages/torch21_capacity.txt
