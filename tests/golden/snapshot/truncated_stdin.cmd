head -c 5000 examples/snap_train_oom.pickle | $OOMDOC snapshot -
