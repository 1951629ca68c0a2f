$OOMDOC doctor --json tests/data/snapshots/frag_default.pickle
