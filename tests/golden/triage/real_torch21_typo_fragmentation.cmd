$OOMDOC triage tests/data/messages/torch21_typo_fragmentation.txt # kerrj/lerf#73
