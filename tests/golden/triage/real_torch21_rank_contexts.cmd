$OOMDOC triage tests/data/messages/torch21_rank_contexts.txt # rwth-i6/returnn#1466
