$OOMDOC triage tests/data/messages/real/027_torch21_allocated_above_total_mmedrag.txt
