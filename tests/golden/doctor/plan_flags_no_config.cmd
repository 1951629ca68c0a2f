$OOMDOC doctor tests/data/snapshots/snap_train_default.pickle --batch 8
