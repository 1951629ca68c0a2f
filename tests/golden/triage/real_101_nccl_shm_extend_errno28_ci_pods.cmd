$OOMDOC triage tests/data/messages/real/101_nccl_shm_extend_errno28_ci_pods.txt
