$OOMDOC snapshot --json --top 3 examples/snap_train_oom.pickle
