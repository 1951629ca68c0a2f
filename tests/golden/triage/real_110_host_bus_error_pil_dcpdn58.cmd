$OOMDOC triage tests/data/messages/real/110_host_bus_error_pil_dcpdn58.txt
