$OOMDOC triage tests/data/messages/real/113_host_bus_error_after_steps_pwgan.txt
