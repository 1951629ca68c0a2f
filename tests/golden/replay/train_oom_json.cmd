$OOMDOC replay tests/data/snapshots/snap_train_oom.pickle --fraction 0.06 --device-total 150109880320 --verify --json
