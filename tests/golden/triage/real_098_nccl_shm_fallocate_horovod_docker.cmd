$OOMDOC triage tests/data/messages/real/098_nccl_shm_fallocate_horovod_docker.txt
