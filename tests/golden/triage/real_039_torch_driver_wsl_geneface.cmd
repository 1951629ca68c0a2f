$OOMDOC triage tests/data/messages/real/039_torch_driver_wsl_geneface.txt
