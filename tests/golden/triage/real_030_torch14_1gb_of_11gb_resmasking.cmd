$OOMDOC triage tests/data/messages/real/030_torch14_1gb_of_11gb_resmasking.txt
