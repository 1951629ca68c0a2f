$OOMDOC doctor tests/data/snapshots/frag_default.pickle tests/data/extracted/frag_default_oom.txt
