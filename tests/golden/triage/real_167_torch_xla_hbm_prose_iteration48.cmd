$OOMDOC triage tests/data/messages/real/167_torch_xla_hbm_prose_iteration48.txt
