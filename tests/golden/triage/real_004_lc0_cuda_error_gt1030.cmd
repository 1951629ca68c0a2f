$OOMDOC triage tests/data/messages/real/004_lc0_cuda_error_gt1030.txt
