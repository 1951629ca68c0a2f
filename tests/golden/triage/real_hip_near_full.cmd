$OOMDOC triage tests/data/messages/hip_near_full.txt # Tongyi-MAI/Z-Image#103
