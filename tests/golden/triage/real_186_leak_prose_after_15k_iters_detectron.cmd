$OOMDOC triage tests/data/messages/real/186_leak_prose_after_15k_iters_detectron.txt
