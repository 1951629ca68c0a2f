$OOMDOC doctor --bogus=3 tests/data/snapshots/snap_train_oom.pickle
