$OOMDOC diff --json tests/data/snapshots/snap_train_default.pickle tests/data/snapshots/snap_train_expandable.pickle
