$OOMDOC replay tests/data/snapshots/frag_default.pickle --compare "expandable_segments:True;max_split_size_mb:64"
