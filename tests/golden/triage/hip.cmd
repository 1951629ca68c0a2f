$OOMDOC triage tests/data/messages/hip_fragmentation.txt
