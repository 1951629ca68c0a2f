$OOMDOC triage tests/data/messages/real/019_torch14_title_only_cvrecipes.txt
