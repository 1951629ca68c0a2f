$OOMDOC triage tests/data/messages/real/094_cudnn_internal_error_rtx2080_tf2.txt
