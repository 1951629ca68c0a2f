$OOMDOC triage tests/data/messages/real/084_cublas_not_init_after_bfc_gtx950.txt
