$OOMDOC replay tests/data/snapshots/frag_default.pickle --set bogus_key:1
