$OOMDOC doctor tests/data/snapshots/snap_train_default.pickle tests/data/snapshots/snap_train_big.pickle.gz
