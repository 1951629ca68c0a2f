$OOMDOC triage tests/data/messages/real/108_host_bus_error_docker_shm_pytorchocr.txt
