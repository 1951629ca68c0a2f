$OOMDOC triage tests/data/messages/xla_tpu_easydel_v4.txt # erfanzar/EasyDeL#166
