$OOMDOC triage tests/data/messages/cudnn_conv_algorithm_tflearn.txt
