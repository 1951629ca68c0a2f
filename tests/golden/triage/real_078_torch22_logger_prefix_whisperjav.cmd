$OOMDOC triage tests/data/messages/real/078_torch22_logger_prefix_whisperjav.txt
