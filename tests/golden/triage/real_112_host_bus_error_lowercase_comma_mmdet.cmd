$OOMDOC triage tests/data/messages/real/112_host_bus_error_lowercase_comma_mmdet.txt
