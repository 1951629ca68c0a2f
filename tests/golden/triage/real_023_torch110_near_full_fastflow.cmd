$OOMDOC triage tests/data/messages/real/023_torch110_near_full_fastflow.txt
