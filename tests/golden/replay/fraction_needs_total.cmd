$OOMDOC replay tests/data/snapshots/frag_default.pickle --fraction 0.5
