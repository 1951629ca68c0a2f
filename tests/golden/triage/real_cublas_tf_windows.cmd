$OOMDOC triage tests/data/messages/cublas_tf_windows.txt # tensorflow/tensorflow#7072
