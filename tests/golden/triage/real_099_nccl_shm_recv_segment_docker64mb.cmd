$OOMDOC triage tests/data/messages/real/099_nccl_shm_recv_segment_docker64mb.txt
