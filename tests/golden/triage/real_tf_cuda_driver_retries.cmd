$OOMDOC triage tests/data/messages/tf_cuda_driver_retries.txt # ymgaq/AQ#91
