$OOMDOC triage --json tests/data/measured/nvidia-smi-q-memory.txt
