$OOMDOC doctor tests/data/extracted/snap_train_default_config.json
