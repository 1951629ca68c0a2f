$OOMDOC triage tests/data/measured/nvidia-smi-query.csv
