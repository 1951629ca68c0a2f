$OOMDOC triage tests/data/messages/vllm_startup_free.txt # pytorch/pytorch#175666
