$OOMDOC triage tests/data/messages/real/038_torch113_driver_update_pinokio.txt
