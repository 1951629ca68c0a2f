$OOMDOC replay tests/data/snapshots/frag_default.pickle --capacity 2GiB --compare "expandable_segments:True;max_split_size_mb:64"
