$OOMDOC triage tests/data/messages/real/045_keras_xception_gpu1_bfc.txt
