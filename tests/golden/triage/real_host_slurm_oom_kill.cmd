$OOMDOC triage tests/data/messages/host_slurm_oom_kill.txt # ArjunaCluster/ArjunaUsers#52
