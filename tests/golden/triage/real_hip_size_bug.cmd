$OOMDOC triage tests/data/messages/hip_size_bug.txt # ROCm/TheRock#1054
