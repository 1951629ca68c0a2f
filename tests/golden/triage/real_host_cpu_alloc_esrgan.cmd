$OOMDOC triage tests/data/messages/host_cpu_alloc_esrgan.txt # xinntao/Real-ESRGAN#272
