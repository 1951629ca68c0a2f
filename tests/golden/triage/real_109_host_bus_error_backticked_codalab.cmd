$OOMDOC triage tests/data/messages/real/109_host_bus_error_backticked_codalab.txt
