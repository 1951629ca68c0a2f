$OOMDOC triage tests/data/messages/real/064_hip_rx6600_first_run_comfy5161.txt
