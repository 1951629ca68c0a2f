$OOMDOC replay tests/data/snapshots/snap_infer_llama.pickle.gz --set expandable_segments:True --compare "max_split_size_mb:128;expandable_segments:False"
