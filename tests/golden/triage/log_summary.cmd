$OOMDOC triage tests/data/extracted/train_oom_log.txt
