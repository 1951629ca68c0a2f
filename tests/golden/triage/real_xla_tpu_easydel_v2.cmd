$OOMDOC triage tests/data/messages/xla_tpu_easydel_v2.txt # erfanzar/EasyDeL#78
