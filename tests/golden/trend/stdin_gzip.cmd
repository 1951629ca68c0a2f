gzip -c tests/data/extracted/snap_train_default_steps.jsonl | $OOMDOC trend -
