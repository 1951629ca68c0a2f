$OOMDOC triage tests/data/messages/cudnn_keras_handle.txt # kbardool/Keras-frcnn#97
