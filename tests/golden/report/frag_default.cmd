$OOMDOC report tests/data/snapshots/frag_default.pickle
