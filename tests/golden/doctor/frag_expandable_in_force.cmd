$OOMDOC doctor tests/data/snapshots/frag_expandable.pickle
