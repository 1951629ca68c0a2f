$OOMDOC doctor --json tests/data/extracted/train_oom_log.txt
