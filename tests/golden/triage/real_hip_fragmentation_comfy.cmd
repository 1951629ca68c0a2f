$OOMDOC triage tests/data/messages/hip_fragmentation_comfy.txt # pytorch/pytorch#138002
