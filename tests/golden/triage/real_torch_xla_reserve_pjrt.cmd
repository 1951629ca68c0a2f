$OOMDOC triage tests/data/messages/torch_xla_reserve_pjrt.txt # pytorch/xla#4847
