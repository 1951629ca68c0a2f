$OOMDOC triage tests/data/messages/real/075_ct2_standalone_large_v2_init.txt
