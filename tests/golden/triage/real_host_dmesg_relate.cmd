$OOMDOC triage tests/data/messages/host_dmesg_relate.txt # inducer/relate#1383
