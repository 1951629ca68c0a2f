$OOMDOC diff --json tests/data/snapshots/frag_default.pickle tests/data/snapshots/frag_default_70.pickle
