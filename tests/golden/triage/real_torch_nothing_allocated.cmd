$OOMDOC triage tests/data/messages/torch_nothing_allocated.txt # epi2me-labs/wf-human-variation#22
