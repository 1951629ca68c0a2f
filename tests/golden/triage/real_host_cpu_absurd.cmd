$OOMDOC triage tests/data/messages/host_cpu_absurd.txt # pytorch/pytorch#20618
