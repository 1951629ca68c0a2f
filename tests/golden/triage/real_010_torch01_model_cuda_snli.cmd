$OOMDOC triage tests/data/messages/real/010_torch01_model_cuda_snli.txt
