$OOMDOC triage tests/data/messages/mps_private_pool.txt # Comfy-Org/ComfyUI#7440
