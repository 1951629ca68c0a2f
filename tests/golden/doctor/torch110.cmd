$OOMDOC doctor tests/data/messages/torch110_fragmentation.txt
