$OOMDOC triage tests/data/messages/torch_docker_other_gpu.txt # ndl-lab/ndlocr_cli#11
