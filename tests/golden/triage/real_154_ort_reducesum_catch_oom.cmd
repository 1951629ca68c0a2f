$OOMDOC triage tests/data/messages/real/154_ort_reducesum_catch_oom.txt
