$OOMDOC doctor tests/data/extracted/snap_train_oom_memory_stats_pprint.txt
