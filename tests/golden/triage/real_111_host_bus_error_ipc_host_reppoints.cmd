$OOMDOC triage tests/data/messages/real/111_host_bus_error_ipc_host_reppoints.txt
