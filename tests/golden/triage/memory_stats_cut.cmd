$OOMDOC triage tests/data/extracted/snap_train_oom_memory_stats_cut.txt
