$OOMDOC triage tests/data/messages/real/173_trt_tactic_batch7_p40.txt
