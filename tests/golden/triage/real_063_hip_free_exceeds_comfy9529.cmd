$OOMDOC triage tests/data/messages/real/063_hip_free_exceeds_comfy9529.txt
