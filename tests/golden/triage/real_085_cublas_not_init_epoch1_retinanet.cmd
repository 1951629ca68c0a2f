$OOMDOC triage tests/data/messages/real/085_cublas_not_init_epoch1_retinanet.txt
