$OOMDOC triage tests/data/messages/tf_tpu_efficientnet.txt # tensorflow/tpu#385
