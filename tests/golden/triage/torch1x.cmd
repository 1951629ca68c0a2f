$OOMDOC triage tests/data/messages/torch1x_capacity.txt
