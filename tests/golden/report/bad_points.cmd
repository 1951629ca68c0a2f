$OOMDOC report --points 1 tests/data/snapshots/frag_default.pickle
