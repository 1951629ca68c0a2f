$OOMDOC triage tests/data/messages/real/187_leak_validation_smi_growth_loop.txt
