$OOMDOC doctor tests/data/measured/nvidia-smi.txt
