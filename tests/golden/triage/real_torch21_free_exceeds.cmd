$OOMDOC triage tests/data/messages/torch21_free_exceeds.txt # levihsu/OOTDiffusion#167
