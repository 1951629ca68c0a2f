$OOMDOC doctor --capacity
