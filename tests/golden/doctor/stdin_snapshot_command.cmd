$OOMDOC doctor - < tests/data/snapshots/snap_train_oom.pickle | grep -F '$ oomdoc'
