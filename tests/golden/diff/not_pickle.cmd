$OOMDOC diff tests/data/snapshots/frag_default.pickle tests/data/extracted/train_oom_log.txt
