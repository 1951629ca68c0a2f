$OOMDOC doctor tests/data/snapshots/snap_train_default.pickle --config tests/data/extracted/snap_train_default_config.json --batch 8 --seq 512
