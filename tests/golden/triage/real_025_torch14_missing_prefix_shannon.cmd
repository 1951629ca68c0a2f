$OOMDOC triage tests/data/messages/real/025_torch14_missing_prefix_shannon.txt
