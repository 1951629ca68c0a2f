$OOMDOC triage tests/data/messages/host_dmesg_commas.txt # 0jc1/py-autovod#7
