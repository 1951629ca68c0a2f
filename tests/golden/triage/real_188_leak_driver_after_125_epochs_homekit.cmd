$OOMDOC triage tests/data/messages/real/188_leak_driver_after_125_epochs_homekit.txt
