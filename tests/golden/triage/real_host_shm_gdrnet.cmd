$OOMDOC triage tests/data/messages/host_shm_gdrnet.txt # THU-DA-6D-Pose-Group/GDR-Net#16
