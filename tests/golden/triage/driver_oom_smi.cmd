$OOMDOC triage tests/data/messages/driver_oom_smi.txt
