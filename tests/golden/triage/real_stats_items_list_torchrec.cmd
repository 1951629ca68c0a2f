$OOMDOC triage tests/data/messages/stats_items_list_torchrec.txt # meta-pytorch/torchrec#3580
