$OOMDOC snapshot examples/snap_train_oom.pickle
