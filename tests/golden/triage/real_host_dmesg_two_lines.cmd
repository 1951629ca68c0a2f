$OOMDOC triage tests/data/messages/host_dmesg_two_lines.txt # intel/platform-resource-manager#42
