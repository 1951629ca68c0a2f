$OOMDOC triage tests/data/messages/hip_cap_allowed.txt # ROCm/TheRock#2118
