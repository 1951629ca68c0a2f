$OOMDOC triage tests/data/extracted/train_oom_stats_log.txt
