$OOMDOC triage tests/data/messages/real/114_host_cpualloc_nospace_bilinear.txt
