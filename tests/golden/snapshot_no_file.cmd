$OOMDOC snapshot
