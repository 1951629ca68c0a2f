$OOMDOC diff tests/data/snapshots/frag_default.pickle
