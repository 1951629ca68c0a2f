$OOMDOC triage tests/data/messages/host_torchrun_llama.txt # meta-llama/llama#856
