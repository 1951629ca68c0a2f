$OOMDOC triage tests/data/messages/real/185_leak_prose_after_2_epochs_sparenet.txt
