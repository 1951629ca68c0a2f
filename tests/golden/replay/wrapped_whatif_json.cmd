$OOMDOC replay tests/data/snapshots/snap_infer_llama.pickle.gz --set expandable_segments:True --compare "expandable_segments:False" --json
