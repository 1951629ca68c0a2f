$OOMDOC triage tests/data/messages/real/181_torch_driver_glued_newlines_comfy12366.txt
