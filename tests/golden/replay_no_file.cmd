$OOMDOC replay
