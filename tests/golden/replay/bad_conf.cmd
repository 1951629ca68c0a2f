$OOMDOC replay tests/data/snapshots/frag_default.pickle --set max_split_size_mb:0
