$OOMDOC triage tests/data/messages/real/100_nccl_shm_kubeflow_t4.txt
