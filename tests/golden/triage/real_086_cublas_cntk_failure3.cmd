$OOMDOC triage tests/data/messages/real/086_cublas_cntk_failure3.txt
