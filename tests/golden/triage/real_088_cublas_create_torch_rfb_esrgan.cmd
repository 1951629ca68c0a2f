$OOMDOC triage tests/data/messages/real/088_cublas_create_torch_rfb_esrgan.txt
