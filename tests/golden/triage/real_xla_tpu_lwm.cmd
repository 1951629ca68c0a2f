$OOMDOC triage tests/data/messages/xla_tpu_lwm.txt # LargeWorldModel/LWM#60
