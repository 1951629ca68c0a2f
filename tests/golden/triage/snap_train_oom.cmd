$OOMDOC triage tests/data/extracted/snap_train_oom_oom.txt
