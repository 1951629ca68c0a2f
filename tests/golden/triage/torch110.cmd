$OOMDOC triage tests/data/messages/torch110_fragmentation.txt
