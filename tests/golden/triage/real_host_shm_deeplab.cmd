$OOMDOC triage tests/data/messages/host_shm_deeplab.txt # kazuto1011/deeplab-pytorch#17
