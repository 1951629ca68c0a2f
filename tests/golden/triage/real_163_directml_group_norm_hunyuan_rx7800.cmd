$OOMDOC triage tests/data/messages/real/163_directml_group_norm_hunyuan_rx7800.txt
