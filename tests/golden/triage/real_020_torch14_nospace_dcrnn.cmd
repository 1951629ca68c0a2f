$OOMDOC triage tests/data/messages/real/020_torch14_nospace_dcrnn.txt
