$OOMDOC triage tests/data/messages/real/017_torch14_2gb_batch2_tianchi.txt
