$OOMDOC replay tests/data/snapshots/frag_default_70.pickle --capacity 2GiB --verify --json
