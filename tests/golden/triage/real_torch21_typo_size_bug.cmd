$OOMDOC triage tests/data/messages/torch21_typo_size_bug.txt # wxian3/NeuroLens#2
