$OOMDOC plan --config tests/data/measured/nvidia-smi.txt
