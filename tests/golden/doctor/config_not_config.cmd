$OOMDOC doctor tests/data/snapshots/snap_train_default.pickle --config tests/data/extracted/train_oom_log.txt
