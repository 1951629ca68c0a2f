$OOMDOC doctor --json -snap tests/data/snapshots/frag_default.pickle
