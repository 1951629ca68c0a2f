$OOMDOC triage tests/data/messages/real/121_host_cpualloc_err0_123gib_mxfold2.txt
