$OOMDOC replay tests/data/snapshots/snap_infer_llama.pickle.gz --verify --json
