$OOMDOC triage tests/data/messages/real/131_host_exitcode9_same_step_minicpmv.txt
