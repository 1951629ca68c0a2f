$OOMDOC doctor tests/data/snapshots/snap_train_long.pickle.gz
