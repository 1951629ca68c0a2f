$OOMDOC triage tests/data/messages/real/103_nccl_shm_prose_video_diffusion.txt
