$OOMDOC triage tests/data/messages/real/127_host_sigkill_flattened_growth_amvur.txt
