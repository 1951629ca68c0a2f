$OOMDOC trend tests/data/extracted/snap_train_long_steps.csv --capacity 139.8GiB
