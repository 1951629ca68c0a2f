$OOMDOC triage tests/data/measured/nvidia-smi.txt
