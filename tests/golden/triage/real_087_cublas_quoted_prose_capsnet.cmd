$OOMDOC triage tests/data/messages/real/087_cublas_quoted_prose_capsnet.txt
