$OOMDOC triage tests/data/messages/cublas_not_initialized_tf114.txt # tensorflow/tensorflow#30912
