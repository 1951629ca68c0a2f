$OOMDOC triage tests/data/messages/real/126_host_torch_shm_ipc_host_flownet2.txt
