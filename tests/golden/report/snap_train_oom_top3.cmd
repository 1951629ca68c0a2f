$OOMDOC report tests/data/snapshots/snap_train_oom.pickle --top 3
