$OOMDOC triage tests/data/messages/real/123_host_torch_shm_thallocator_dls.txt
