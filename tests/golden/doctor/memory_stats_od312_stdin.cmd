cat tests/data/extracted/snap_train_oom_memory_stats_od312.txt | $OOMDOC doctor -
