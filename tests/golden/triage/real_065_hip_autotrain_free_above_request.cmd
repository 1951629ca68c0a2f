$OOMDOC triage tests/data/messages/real/065_hip_autotrain_free_above_request.txt
