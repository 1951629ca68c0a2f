$OOMDOC doctor tests/data/snapshots/frag_default.pickle --capacity 2GiB
