$OOMDOC doctor tests/data/extracted/snap_train_oom_summary.txt
