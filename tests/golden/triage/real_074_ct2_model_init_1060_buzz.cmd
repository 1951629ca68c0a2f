$OOMDOC triage tests/data/messages/real/074_ct2_model_init_1060_buzz.txt
