$OOMDOC trend tests/data/snapshots/frag_default.pickle
