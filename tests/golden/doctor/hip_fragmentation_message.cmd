$OOMDOC doctor tests/data/messages/hip_fragmentation.txt # a ROCm message, no cap: ROCm variables, plan before the next launch
