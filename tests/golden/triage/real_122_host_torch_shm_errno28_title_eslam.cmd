$OOMDOC triage tests/data/messages/real/122_host_torch_shm_errno28_title_eslam.txt
