$OOMDOC doctor --json tests/data/snapshots/snap_train_big.pickle.gz tests/data/extracted/snap_train_default_config.json --batch 8 --seq 512
