$OOMDOC triage tests/data/messages/torch_xla_reserve_resnet.txt # pytorch/xla#3470
