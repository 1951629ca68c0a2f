$OOMDOC diff tests/data/snapshots/frag_default.pickle tests/data/bad/refuse_global.pickle
