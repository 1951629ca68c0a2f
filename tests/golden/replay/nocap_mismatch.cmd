$OOMDOC replay tests/data/snapshots/frag_default.pickle --verify
