$OOMDOC snapshot --top -1 examples/snap_train_oom.pickle
