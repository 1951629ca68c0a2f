$OOMDOC report tests/data/snapshots/frag_default.pickle --batch 8
