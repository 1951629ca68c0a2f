$OOMDOC snapshot --device 3 examples/snap_train_oom.pickle
