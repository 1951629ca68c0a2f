$OOMDOC triage tests/data/messages/hip_free_exceeds.txt # pytorch/pytorch#175431
