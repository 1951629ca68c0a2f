$OOMDOC replay -snap.pickle
