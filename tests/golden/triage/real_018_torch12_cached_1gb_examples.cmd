$OOMDOC triage tests/data/messages/real/018_torch12_cached_1gb_examples.txt
