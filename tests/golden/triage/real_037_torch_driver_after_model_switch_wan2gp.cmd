$OOMDOC triage tests/data/messages/real/037_torch_driver_after_model_switch_wan2gp.txt
