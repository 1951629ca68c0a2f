$OOMDOC triage tests/data/messages/torch_driver_oom.txt # taohan10200/IIM#28
