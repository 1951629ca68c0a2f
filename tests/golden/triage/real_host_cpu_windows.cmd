$OOMDOC triage tests/data/messages/host_cpu_windows.txt # MaximeVandegar/Papers-in-100-Lines-of-Code#10
