$OOMDOC triage tests/data/messages/real/076_ct2_prose_nospace_standalone255.txt
